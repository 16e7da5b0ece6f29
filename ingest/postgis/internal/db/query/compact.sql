-- name: CompactAdvisoryLock :one
-- CompactAdvisoryLock takes the compactor's transaction-level advisory
-- lock without waiting: one compactor at a time per database.
SELECT pg_try_advisory_xact_lock(hashtext('geoingest compact'))::boolean AS locked;

-- name: OwnPartitionCounts :many
-- OwnPartitionCounts is, per feature table, the current jobs that have a
-- partition of their own.
SELECT t.target_table::text AS target_table, count(j.job_id)::bigint AS own
FROM (VALUES ('parcels'), ('admin_units')) t(target_table)
LEFT JOIN jobs j ON j.target_table = t.target_table AND j.status = 'current' AND j.job_ref > 0
GROUP BY t.target_table
ORDER BY t.target_table;

-- name: LockOldestOwnPartition :one
-- LockOldestOwnPartition locks the source row of the oldest current job
-- of target that has a partition of its own, skipping sources a write
-- gate (or another compactor) holds, and the jobs in skip, and returns
-- the job. No row: none is free.
SELECT j.job_id, j.feature_count
FROM jobs j
JOIN sources s ON s.current_job_id = j.job_id
WHERE j.target_table = @target_table::text AND j.status = 'current' AND j.job_ref > 0
  AND NOT (j.job_id = ANY (@skip::text[]))
ORDER BY j.committed_at, j.job_id
LIMIT 1
FOR UPDATE OF s SKIP LOCKED;

-- name: FoldJob :one
-- FoldJob folds a job's own partition into the shared one (migration
-- 0011, geoingest_fold_job). The caller holds the source's row lock.
SELECT f.new_ref::bigint AS new_ref, f.moved::bigint AS moved FROM geoingest_fold_job(@job_id::text) f;

-- name: NoteFolded :one
-- NoteFolded records which transactions a folded partition's drop waits
-- for (geoingest_note_folded).
SELECT geoingest_note_folded()::bigint AS noted;

-- name: DropFolded :one
-- DropFolded drops one folded partition whose wait is over and returns
-- its name, '' when none is ready (geoingest_drop_folded).
SELECT coalesce(geoingest_drop_folded(), '')::text AS dropped;

-- name: PendingFolded :one
-- PendingFolded is the number of folded partitions not dropped yet.
SELECT count(*)::bigint AS pending FROM geoingest_folded;

-- name: LockTimeout :one
-- LockTimeout is the lock_timeout in force.
SELECT current_setting('lock_timeout')::text AS lock_timeout;

-- name: SetLockTimeout :exec
-- SetLockTimeout sets lock_timeout for the rest of the transaction.
SELECT set_config('lock_timeout', @timeout::text, true);

-- name: SharedHoldsCurrent :one
-- SharedHoldsCurrent is whether a current job of target has its rows in
-- the table's shared partition (job_ref 0): whether the table's reads see
-- more than its own partitions.
SELECT EXISTS (
  SELECT 1 FROM jobs
  WHERE target_table = @target_table::text AND status = 'current' AND job_ref <= 0
)::boolean AS holds;

-- name: AnalyzeParcelsParent :exec
-- AnalyzeParcelsParent gathers the statistics of the parcels table as a
-- whole (its partitions' too), which autovacuum never gathers for a
-- partitioned table.
ANALYZE geoingest_store.parcels;

-- name: AnalyzeAdminUnitsParent :exec
-- AnalyzeAdminUnitsParent is AnalyzeParcelsParent for admin_units.
ANALYZE geoingest_store.admin_units;

-- name: ParentRows :one
-- ParentRows is the row count of a feature table as a whole as its last
-- ANALYZE found it (pg_class.reltuples of the partitioned table), -1 when
-- it was never analyzed as a whole. The target is 'parcels' or
-- 'admin_units' (no row for any other).
SELECT c.reltuples::bigint AS reltuples
FROM pg_catalog.pg_class c
WHERE c.oid = CASE @target_table::text
  WHEN 'parcels' THEN 'geoingest_store.parcels'::regclass
  WHEN 'admin_units' THEN 'geoingest_store.admin_units'::regclass
END;

-- name: MayAnalyzeFeatureTables :one
-- MayAnalyzeFeatureTables is whether the session's role may ANALYZE the
-- feature tables: PostgreSQL 15 lets only a table's owner (or the
-- database's owner, or a superuser) do it, and skips the table with a
-- warning for any other role.
SELECT (pg_catalog.pg_has_role(c.relowner, 'USAGE') OR pg_catalog.pg_has_role(d.datdba, 'USAGE'))::boolean AS may
FROM pg_catalog.pg_class c, pg_catalog.pg_database d
WHERE c.oid = 'geoingest_store.parcels'::regclass AND d.datname = current_database();
