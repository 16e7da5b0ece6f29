-- name: JobExtent :one
-- JobExtent is the extent of a job's rows (NaNs when it has none).
SELECT coalesce(min_x, 'NaN')::float8 AS min_x, coalesce(min_y, 'NaN')::float8 AS min_y,
       coalesce(max_x, 'NaN')::float8 AS max_x, coalesce(max_y, 'NaN')::float8 AS max_y
FROM geoingest_job_extent(@target_table::text, @job_ref::bigint);

-- name: JobStats :one
SELECT * FROM geoingest_job_stats WHERE job_id = @job_id;

-- name: RecordJobStats :exec
INSERT INTO geoingest_job_stats (job_id, min_x, min_y, max_x, max_y, keys)
VALUES (@job_id, sqlc.narg(min_x), sqlc.narg(min_y), sqlc.narg(max_x), sqlc.narg(max_y), @keys)
ON CONFLICT (job_id) DO NOTHING;

-- name: PendJobTable :one
-- PendJobTable moves a job's features out of the readers' sight (see
-- geoingest_pend_job_table) and returns its ref.
SELECT geoingest_pend_job_table(@target_table::text, @job_id::text, @old_ref::bigint, @new_ref::bigint)::bigint AS job_ref;

-- name: DropPendingTable :exec
SELECT geoingest_drop_pending_table(@target_table::text, @job_ref::bigint);

-- name: PendingRows :one
SELECT n::bigint AS n, area_m2::float8 AS area_m2 FROM geoingest_pending_rows(@target_table::text, @job_ref::bigint);

-- name: InsertGuardEvent :execrows
-- InsertGuardEvent records a guard decision; a second approved, rejected
-- or superseded row for the job inserts nothing (zero rows).
INSERT INTO geoingest_guard_events (job_id, action, actor, reason, summary)
VALUES (@job_id, @action, @actor, @reason, @summary)
ON CONFLICT DO NOTHING;

-- name: GuardEvents :many
SELECT * FROM geoingest_guard_events WHERE job_id = @job_id ORDER BY id;

-- name: PendingJobs :many
-- PendingJobs lists the pending versions with the reason they were held,
-- oldest first.
SELECT j.job_id, j.source_bucket, j.source_key, j.target_table, j.order_token, j.feature_count,
       j.total_area_m2, j.job_ref, j.committed_at, coalesce(e.reason, '')::text AS reason,
       coalesce(e.summary, '{}')::jsonb AS summary,
       coalesce((SELECT s.current_job_id FROM sources s
                 WHERE s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                   AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version), '')::text AS current_job_id
FROM jobs j
LEFT JOIN LATERAL (SELECT g.reason, g.summary FROM geoingest_guard_events g
                   WHERE g.job_id = j.job_id AND g.action = 'held' ORDER BY g.id DESC LIMIT 1) e ON true
WHERE j.status = 'pending'
ORDER BY j.committed_at, j.job_id;

-- name: PendingJob :many
-- PendingJob is PendingJobs' row of one job, none when it is not
-- pending (never held, or decided or superseded since).
SELECT j.job_id, j.feature_count, j.total_area_m2, coalesce(j.quarantined, 0)::bigint AS quarantined,
       coalesce(e.reason, '')::text AS reason
FROM jobs j
LEFT JOIN LATERAL (SELECT g.reason FROM geoingest_guard_events g
                   WHERE g.job_id = j.job_id AND g.action = 'held' ORDER BY g.id DESC LIMIT 1) e ON true
WHERE j.job_id = @job_id AND j.status = 'pending';

-- name: OlderPendingJobs :many
-- OlderPendingJobs are the pending versions of a source (but job_id),
-- for the caller to order against a newer one.
SELECT job_id, job_ref, order_token FROM jobs
WHERE source_bucket = @source_bucket AND source_key = @source_key
  AND target_table = @target_table AND pipeline_version = @pipeline_version
  AND status = 'pending' AND job_id <> @job_id
FOR UPDATE;

-- name: IncomingExtent :one
-- IncomingExtent is the extent of the version in geoingest_incoming
-- (NaNs when it has no rows).
SELECT coalesce(min_x, 'NaN')::float8 AS min_x, coalesce(min_y, 'NaN')::float8 AS min_y,
       coalesce(max_x, 'NaN')::float8 AS max_x, coalesce(max_y, 'NaN')::float8 AS max_y
FROM geoingest_incoming_extent();

-- name: PendIncoming :one
-- PendIncoming moves the version in geoingest_incoming into the job's own
-- table for new_ref, and returns how many rows it moved.
SELECT geoingest_pend_incoming(@target_table::text, @new_ref::bigint)::bigint AS moved;
