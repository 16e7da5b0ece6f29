-- Retention (Store.Prune): what `geoingest prune` removes of what grows
-- with every job. See docs/operations.md, "Retention, prune and vacuum".

-- name: PruneJobCandidates :many
-- PruneJobCandidates lists the ledger jobs that the retention policy may
-- remove: not current, not their source's current job, beyond the newest
-- @keep non-current jobs of their source (by commit time), committed
-- before @before; with their order token and their source's
-- current_order, so that the caller keeps every job whose redelivery
-- would not be superseded by order (see Store.Prune). At most @max_rows,
-- oldest first.
SELECT j.job_id, j.order_token, coalesce(s.current_order, '')::text AS current_order
FROM (SELECT j.job_id, j.order_token, j.committed_at, j.source_bucket, j.source_key,
             j.target_table, j.pipeline_version,
             row_number() OVER (PARTITION BY j.source_bucket, j.source_key, j.target_table, j.pipeline_version
                                ORDER BY j.committed_at DESC, j.job_id DESC) AS rn
      FROM jobs j
      WHERE j.status <> 'current') j
LEFT JOIN sources s ON s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                   AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version
WHERE j.rn > @keep::int AND j.committed_at < @before::timestamptz
  AND (s.current_job_id IS NULL OR s.current_job_id <> j.job_id)
ORDER BY j.committed_at, j.job_id
LIMIT @max_rows::int;

-- name: PruneJobs :one
-- PruneJobs deletes the ledger rows @job_ids (those still not current and
-- not a source's current job), their claims (and so their claim events),
-- their report assignments and their generations' marks in
-- geoingest_hashes_current (migration 0057: a job_ref is never reused,
-- so a deleted job's mark is only a row that grows the table); their
-- job_crs rows go with the ledger row (ON DELETE CASCADE). Returns how
-- many jobs, claims and assignments.
WITH gone AS (
    DELETE FROM jobs j
    WHERE j.job_id = ANY (@job_ids::text[]) AND j.status <> 'current'
      AND NOT EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id)
    RETURNING j.job_id, j.job_ref
), c AS (
    DELETE FROM claims c USING gone WHERE c.job_id = gone.job_id RETURNING c.job_id
), r AS (
    DELETE FROM report_assignments r USING gone WHERE r.parcel_job_id = gone.job_id RETURNING r.parcel_job_id
), h AS (
    DELETE FROM geoingest_hashes_current h USING gone WHERE h.job_ref = gone.job_ref RETURNING h.job_ref
)
SELECT (SELECT count(*) FROM gone)::bigint AS jobs, (SELECT count(*) FROM c)::bigint AS claims,
       (SELECT count(*) FROM r)::bigint AS assignments;

-- name: PruneStaleClaims :execrows
-- PruneStaleClaims deletes claims that never committed (FAILED, or
-- CLAIMED under a lease that ended) and have not changed since @before,
-- with their events. Such a claim stops nothing: a FAILED job may be
-- re-run and an expired lease taken over, which is what a redelivery
-- after the deletion does too. A ledger row's claim is never touched.
DELETE FROM claims c
WHERE c.state <> 'COMMITTED' AND c.updated_at < @before::timestamptz AND c.lease_until < @before::timestamptz
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = c.job_id);
