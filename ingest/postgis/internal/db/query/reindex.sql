-- name: CompactSessionLock :one
-- CompactSessionLock takes the compactor's advisory lock (the one
-- CompactAdvisoryLock takes per transaction) for the session, without
-- waiting: REINDEX CONCURRENTLY runs outside any transaction block, and
-- the lock keeps a second compactor from folding or rebuilding meanwhile.
SELECT pg_try_advisory_lock(hashtext('geoingest compact'))::boolean AS locked;

-- name: CompactSessionUnlock :one
-- CompactSessionUnlock releases CompactSessionLock.
SELECT pg_advisory_unlock(hashtext('geoingest compact'))::boolean AS unlocked;

-- name: SharedIndexes :many
-- SharedIndexes lists the shared partitions' indexes with their size, the
-- partition's live rows, the bytes per row recorded after their last
-- rebuild (0: none), and whether each is the leftover of an interrupted REINDEX
-- CONCURRENTLY (geoingest_shared_indexes, migration 0021).
SELECT s.schema_name::text AS schema_name, s.index_name::text AS index_name, s.table_name::text AS table_name,
       s.bytes::bigint AS bytes, s.live_rows::float8 AS live_rows,
       coalesce(s.built_bytes_per_row, 0)::float8 AS built_bytes_per_row, s.leftover::boolean AS leftover,
       s.may_rebuild::boolean AS may_rebuild
FROM geoingest_shared_indexes() s;

-- name: NoteIndexBuild :one
-- NoteIndexBuild records an index's bytes per live row right after its
-- rebuild and returns its size (geoingest_note_index_build).
SELECT coalesce(geoingest_note_index_build(@index_name::text, @seconds::float8), 0)::bigint AS bytes;

-- name: SetSessionLockTimeout :exec
-- SetSessionLockTimeout sets lock_timeout for the session.
SELECT set_config('lock_timeout', @timeout::text, false);

-- name: ResetSessionLockTimeout :exec
-- ResetSessionLockTimeout gives the session back the lock_timeout it
-- would have had without SetSessionLockTimeout (the server's, the
-- database's or the role's), before it goes back to the pool.
RESET lock_timeout;
