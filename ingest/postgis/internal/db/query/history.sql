-- name: SetHistoryJob :exec
-- SetHistoryJob names the job whose write-gate transaction this is, and
-- its job_ref, for the trigger that copies the rows it retires into
-- feature_history (migration 0033); until the transaction ends.
SELECT set_config('geoingest.history_job', @job_id::text, true),
       set_config('geoingest.history_ref', coalesce((SELECT job_ref FROM jobs WHERE job_id = @job_id::text), 0)::text, true);

-- name: FeaturesAsOf :many
-- FeaturesAsOf is the rows of target's sources (one source when bucket
-- and key are given) as they were at a time (migration 0033).
SELECT h.source_bucket::text AS source_bucket, h.source_key::text AS source_key, h.job_id::text AS job_id,
       h.feature_id::bigint AS feature_id, h.properties::jsonb AS properties,
       coalesce(ST_AsGeoJSON(h.geom, 7), '')::text AS geometry, coalesce(h.area_m2, 0)::float8 AS area_m2
FROM geoingest_features_as_of(@target_table::text, @at::timestamptz, sqlc.narg(bucket)::text, sqlc.narg(key)::text) h
ORDER BY h.source_bucket, h.source_key, h.feature_id;

-- name: AreaAsOf :many
-- AreaAsOf is each source's feature count and area at a time.
SELECT h.source_bucket::text AS source_bucket, h.source_key::text AS source_key, h.job_id::text AS job_id,
       count(*)::bigint AS features, coalesce(sum(h.area_m2), 0)::float8 AS area_m2
FROM geoingest_features_as_of(@target_table::text, @at::timestamptz, sqlc.narg(bucket)::text, sqlc.narg(key)::text) h
GROUP BY 1, 2, 3 ORDER BY 1, 2;

-- name: RetireWhole :one
-- RetireWhole detaches a job's own partition and keeps it as the history
-- of the job the gate named (''), or returns why not, having changed
-- nothing (migration 0046: geoingest_retire_whole).
SELECT coalesce(geoingest_retire_whole(j.target_table, j.job_ref), '')::text AS not_detached
FROM jobs j WHERE j.job_id = @job_id;

-- name: HashUpgradeJobs :many
-- HashUpgradeJobs is the current jobs, whose rows may hold match hashes
-- of a form before migration 0044 (geoingest_upgrade_match_hashes).
SELECT j.job_id
FROM jobs j JOIN sources s ON s.current_job_id = j.job_id
WHERE j.status = 'current'
ORDER BY j.job_ref;

-- name: HashesOld :one
-- HashesOld is whether a current job's rows hold a match hash of a form
-- before migration 0044 (MD5), which geoingest_upgrade_match_hashes
-- rewrites: one read of its rows at most, by its job_ref (the partition
-- pruned at run time), stopping at the first such row. Hashes never
-- stored (NULL: rows the server transformed) are not looked for. A
-- generation marked in geoingest_hashes_current (migration 0057: the
-- prefilter read it and found none) is not read.
SELECT (CASE WHEN EXISTS (SELECT FROM geoingest_hashes_current h JOIN jobs j ON j.job_ref = h.job_ref
                          WHERE j.job_id = @job_id::text) THEN false ELSE
        EXISTS (SELECT FROM geoingest_store.parcels o
                WHERE o.job_ref = (SELECT j.job_ref FROM jobs j JOIN sources s ON s.current_job_id = j.job_id
                                   WHERE j.job_id = @job_id::text AND j.status = 'current' AND j.target_table = 'parcels')
                  AND o.geom IS NOT NULL
                  AND (o.geom_hash >= geoingest_hash_form_end() OR o.props_hash >= geoingest_hash_form_end()))
     OR EXISTS (SELECT FROM geoingest_store.admin_units o
                WHERE o.job_ref = (SELECT j.job_ref FROM jobs j JOIN sources s ON s.current_job_id = j.job_id
                                   WHERE j.job_id = @job_id::text AND j.status = 'current' AND j.target_table = 'admin_units')
                  AND o.geom IS NOT NULL
                  AND (o.geom_hash >= geoingest_hash_form_end() OR o.props_hash >= geoingest_hash_form_end())) END)::boolean AS old;

-- name: UpgradeMatchHashes :one
-- UpgradeMatchHashes rewrites the old-form match hashes among the n rows
-- of a current job after a ctid ('' from the start), and returns how many,
-- the last ctid read ('' at the end), and whether a write gate held the
-- source (nothing done) (migration 0046).
SELECT u.rewritten::bigint AS rewritten, coalesce(u.scanned_to::text, '')::text AS next, u.busy::boolean AS busy
FROM geoingest_upgrade_match_hashes(@job_id::text, nullif(@after::text, '')::tid, @n::int) u;

-- name: LockFeatureViews :exec
-- LockFeatureViews takes ACCESS SHARE on the feature tables (through
-- their views, which the analyst may read) before a repeatable-read
-- transaction's first snapshot: LOCK takes none, so the snapshot is
-- taken after any write gate holding them commits, and such a reader
-- never has a snapshot older than a generation kept whole by a detach
-- (migration 0046) that it then reads without it.
LOCK TABLE parcels, admin_units IN ACCESS SHARE MODE;
