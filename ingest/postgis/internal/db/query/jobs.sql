-- name: InsertJob :execrows
-- InsertJob is the write gate. It must be the first statement of the
-- transaction that writes the job's features. Zero rows means the job was
-- already written (or is being written by a concurrent transaction, in which
-- case this statement waited for it to end). job_ref is the job's compact
-- reference in the feature tables: positive for a job whose features get a
-- partition of their own, negative for one that shares the target's shared
-- partition (see migration 0005).
INSERT INTO jobs (job_id, source_bucket, source_key, version_token, order_token, params,
                  pipeline, pipeline_version, target_table, status, content_hash, source_srid, job_ref)
VALUES (@job_id, @source_bucket, @source_key, @version_token, @order_token, @params,
        @pipeline, @pipeline_version, @target_table, 'current', @content_hash, @source_srid, @job_ref)
ON CONFLICT (job_id) DO NOTHING;

-- name: GetJob :one
SELECT * FROM jobs WHERE job_id = @job_id;

-- name: FinishJob :exec
-- FinishJob records what the write gate wrote for a job, and how long its
-- transaction has taken so far (committed_at is the transaction's now()).
UPDATE jobs
SET status = @status, feature_count = @feature_count, total_area_m2 = @total_area_m2,
    features_checksum = @features_checksum,
    encoding = @encoding, skipped_null = @skipped_null, skipped_type = @skipped_type, skipped_cast = @skipped_cast,
    repaired_invalid = @repaired_invalid, linearised_curves = @linearised_curves, dropped_zm = @dropped_zm,
    quarantined = sqlc.narg(quarantined),
    write_seconds = extract(epoch FROM clock_timestamp() - committed_at)
WHERE job_id = @job_id;

-- name: SetJobStatus :exec
UPDATE jobs SET status = @status WHERE job_id = @job_id;

-- name: EnsureSource :exec
INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version)
VALUES (@source_bucket, @source_key, @target_table, @pipeline_version)
ON CONFLICT DO NOTHING;

-- name: LockSource :one
-- LockSource takes the source's row lock for the rest of the transaction, so
-- that two versions of one source are written one after the other.
SELECT * FROM sources
WHERE source_bucket = @source_bucket AND source_key = @source_key
  AND target_table = @target_table AND pipeline_version = @pipeline_version
FOR UPDATE;

-- name: SetSourceCurrent :exec
UPDATE sources
SET current_job_id = sqlc.narg(current_job_id), current_order = @current_order, updated_at = now()
WHERE source_bucket = @source_bucket AND source_key = @source_key
  AND target_table = @target_table AND pipeline_version = @pipeline_version;

-- name: SRIDKnown :one
SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = @srid::int) AS known;

-- name: SourceCurrentJob :one
-- SourceCurrentJob is the job id of a source's current generation, or ''
-- when it has none (or the source is unknown).
SELECT coalesce((SELECT current_job_id FROM sources
                 WHERE source_bucket = @source_bucket AND source_key = @source_key
                   AND target_table = @target_table AND pipeline_version = @pipeline_version), '')::text AS job_id;

-- name: JobAgainstCurrent :one
-- JobAgainstCurrent is a committed job's status and content hash, with
-- its source's current job and that job's content hash ('' when the
-- source has none): what `ingest` compares for a file already present
-- (Store.JobAgainstCurrent). No row when the job is not in the ledger.
SELECT j.status, j.content_hash,
       coalesce(s.current_job_id, '')::text AS current_job_id,
       coalesce(c.content_hash, '')::text AS current_content_hash
FROM jobs j
LEFT JOIN sources s ON s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                   AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version
LEFT JOIN jobs c ON c.job_id = s.current_job_id
WHERE j.job_id = @job_id;
