-- name: JobRefOf :one
-- JobRefOf is a job's job_ref (the generation a write gate replaces; the
-- caller holds its source's row lock, so no fold moves it meanwhile).
SELECT job_ref FROM jobs WHERE job_id = @job_id;

-- name: MatchGeneration :one
-- MatchGeneration matches a job's new rows with the generation they
-- replace (old_ref 0 and base_job_id empty: none), sets the matched rows' feature ids and
-- records the changes (migration 0025, geoingest_match_generation).
SELECT m.added::bigint AS added, m.removed::bigint AS removed, m.geometry::bigint AS geometry,
       m.attributes::bigint AS attributes, m.unchanged::bigint AS unchanged,
       m.by_key::bigint AS by_key, m.by_content::bigint AS by_content, m.by_overlap::bigint AS by_overlap,
       m.duplicate_keys::bigint AS duplicate_keys, m.lineage::bigint AS lineage,
       coalesce(ST_AsGeoJSON(m.bbox::geometry, 7), '')::text AS bbox
FROM geoingest_match_generation(@target_table::text, @job_id::text, @base_job_id::text,
                                @new_ref::bigint, @old_ref::bigint,
                                @key_fields::text[], @min_iou::float8) m;

-- name: RecordFirstVersion :one
-- RecordFirstVersion records the changes of a source's first version
-- whose rows the writer measured (copyFeatures: @added features, the
-- box of their coordinates @min_x..@max_y, which is ST_Extent's: exact,
-- not the rows' stored float boxes): every feature added, what
-- geoingest_match_generation records for a version with no generation to
-- match (migration 0025), the box cast to a geometry as it casts
-- ST_Extent's, without that function's pass over the rows.
INSERT INTO job_changes (job_id, target_table, source_bucket, source_key, base_job_id, added, bbox)
SELECT j.job_id, @target_table::text, j.source_bucket, j.source_key, NULL, @added::bigint,
       ST_MakeBox2D(ST_Point(@min_x::float8, @min_y::float8), ST_Point(@max_x::float8, @max_y::float8))::geometry
FROM jobs j WHERE j.job_id = @job_id::text
RETURNING coalesce(ST_AsGeoJSON(bbox::geometry, 7), '')::text AS bbox;

-- name: RecordRetire :one
-- RecordRetire records a delete job's changes: the retired generation's
-- features removed (migration 0025).
SELECT m.removed::bigint AS removed, coalesce(ST_AsGeoJSON(m.bbox::geometry, 7), '')::text AS bbox
FROM geoingest_record_retire(@target_table::text, @job_id::text, @base_job_id::text, @old_ref::bigint) m;

-- name: NotifyChanges :exec
-- NotifyChanges wakes the change feed's listeners (channel
-- geoingest_changes), sent only if the write gate commits.
SELECT pg_notify('geoingest_changes', @payload::text);

-- name: JobChangeCounts :one
-- JobChangeCounts is one job's change record.
SELECT job_id, target_table, source_bucket, source_key, coalesce(base_job_id, '')::text AS base_job_id,
       added, removed, geometry, attributes, unchanged, by_key, by_content, by_overlap,
       duplicate_keys, lineage, coalesce(ST_AsGeoJSON(bbox::geometry, 7), '')::text AS bbox,
       recorded_at, xid::text AS cursor
FROM job_changes WHERE job_id = @job_id;

-- name: JobFeatureChanges :many
-- JobFeatureChanges lists one job's changed features, in feature id order.
SELECT c.job_id, c.feature_id, c.kind, coalesce(c.matched_by, '')::text AS matched_by,
       coalesce(ST_AsGeoJSON(c.old_bbox::geometry, 7), '')::text AS old_bbox,
       coalesce(ST_AsGeoJSON(c.new_bbox::geometry, 7), '')::text AS new_bbox,
       c.area_delta_m2
FROM feature_changes c WHERE c.job_id = @job_id
ORDER BY c.feature_id;

-- name: JobLineage :many
-- JobLineage lists one job's lineage pairs (a removed feature and an
-- added one that share area: the pieces of a split or a merge).
SELECT l.old_feature_id, l.new_feature_id, l.shared_m2
FROM feature_lineage l WHERE l.job_id = @job_id
ORDER BY l.old_feature_id, l.new_feature_id;

-- name: SourceChangeJobs :many
-- SourceChangeJobs lists a source's change records (by bucket and key,
-- every target and pipeline version) recorded at or after since, oldest
-- first.
SELECT job_id, target_table, source_bucket, source_key, coalesce(base_job_id, '')::text AS base_job_id,
       added, removed, geometry, attributes, unchanged, by_key, by_content, by_overlap,
       duplicate_keys, lineage, coalesce(ST_AsGeoJSON(bbox::geometry, 7), '')::text AS bbox,
       recorded_at, xid::text AS cursor
FROM job_changes
WHERE source_bucket = @source_bucket AND source_key = @source_key AND recorded_at >= @since
ORDER BY recorded_at, xid;

-- name: ChangeFeed :many
-- ChangeFeed is the change feed: the change records committed after the
-- cursor (a writing transaction's id), in commit-safe order. Only records
-- whose transaction is older than every transaction still running are
-- returned, so that no record can later appear behind a cursor already
-- handed out: a long transaction delays the feed, it never skips.
SELECT job_id, target_table, source_bucket, source_key, coalesce(base_job_id, '')::text AS base_job_id,
       added, removed, geometry, attributes, unchanged, by_key, by_content, by_overlap,
       duplicate_keys, lineage, coalesce(ST_AsGeoJSON(bbox::geometry, 7), '')::text AS bbox,
       recorded_at, xid::text AS cursor
FROM job_changes
WHERE xid > CAST(@after::text AS xid8) AND xid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY xid
LIMIT @max_rows;

-- name: ChangeFeedBehind :one
-- ChangeFeedBehind says whether change records committed after the cursor
-- exist that ChangeFeed does not return yet: their transaction is not
-- older than every transaction still running.
SELECT EXISTS (SELECT FROM job_changes
               WHERE xid > CAST(@after::text AS xid8)
                 AND xid >= pg_snapshot_xmin(pg_current_snapshot()))::boolean AS behind;

-- name: SourceHasJobs :one
-- SourceHasJobs is whether any job (of any target, status or pipeline
-- version) was ever recorded for the source bucket/key.
SELECT EXISTS (SELECT FROM jobs j WHERE j.source_bucket = @source_bucket::text AND j.source_key = @source_key::text)::boolean AS has;

-- name: ChangeFeedNext :one
-- ChangeFeedNext is the first transaction id not yet assigned (the
-- snapshot's xmax, read without assigning one): every record's cursor is
-- below it, so a cursor at or past it is no cursor of this database.
SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next;
