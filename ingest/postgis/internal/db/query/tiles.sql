-- name: ExpiredTiles :many
-- ExpiredTiles lists the z/x/y tiles a job expired (migration 0029,
-- geoingest_expired_tiles): zoom by zoom from min_zoom, within max_tiles.
SELECT t.z::int AS z, t.x::int AS x, t.y::int AS y
FROM geoingest_expired_tiles(@job_id::text, @min_zoom::int, @max_zoom::int, @max_tiles::bigint, @buffer::float8) t;

-- name: JobHasChanges :one
-- JobHasChanges reports whether a job has a change record.
SELECT EXISTS (SELECT FROM job_changes WHERE job_id = @job_id)::boolean AS has;
