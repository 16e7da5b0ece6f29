-- name: ListJobs :many
-- ListJobs lists claims with their ledger rows, newest first. state
-- matches the claim state (CLAIMED, COMMITTED, FAILED) or the ledger status
-- (current, superseded, replaced, retired, deleted); source matches the
-- start of the source key. Empty filters match everything.
SELECT c.job_id, c.state AS claim_state, coalesce(j.status, '')::text AS status,
       c.source_bucket, c.source_key,
       coalesce(j.target_table, '')::text AS target_table,
       coalesce(j.pipeline_version, '')::text AS pipeline_version,
       coalesce(j.feature_count, 0)::bigint AS feature_count,
       coalesce(j.total_area_m2, 0)::float8 AS total_area_m2,
       c.attempts, coalesce(c.last_error, '')::text AS last_error, c.updated_at
FROM claims c
LEFT JOIN jobs j ON j.job_id = c.job_id
WHERE (@state::text = '' OR c.state = @state::text OR j.status = @state::text)
  AND (@source::text = '' OR starts_with(c.source_key, @source::text))
ORDER BY c.updated_at DESC, c.job_id
LIMIT @max_rows;

-- name: ListSources :many
-- ListSources lists sources with their current generation: how many jobs
-- (versions, deletes) each has had and what its current job holds.
SELECT s.source_bucket, s.source_key, s.target_table, s.pipeline_version,
       coalesce(s.current_job_id, '')::text AS current_job_id, s.updated_at,
       (SELECT count(*) FROM jobs j WHERE j.source_bucket = s.source_bucket AND j.source_key = s.source_key
          AND j.target_table = s.target_table AND j.pipeline_version = s.pipeline_version)::bigint AS generations,
       coalesce(c.feature_count, 0)::bigint AS feature_count, coalesce(c.total_area_m2, 0)::float8 AS total_area_m2
FROM sources s
LEFT JOIN jobs c ON c.job_id = s.current_job_id
WHERE (@source::text = '' OR starts_with(s.source_key, @source::text))
ORDER BY s.source_bucket, s.source_key, s.target_table, s.pipeline_version
LIMIT @max_rows;
