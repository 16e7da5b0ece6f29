-- name: ConsoleJobs :many
-- The one read model of jobs: the operator's console (package
-- internal/console) and `geoingest jobs` read these queries.
-- A job's console state is 'failed' (claim FAILED), 'in-flight' (CLAIMED
-- under a live lease), 'lease-expired' (CLAIMED, lease ended), else its
-- ledger status.
-- ConsoleJobs lists claims with their ledger rows, newest first claim
-- first, one page: keyset pagination on (created_at, job_id), read off
-- claims_created_idx or, for one claim state, claims_state_created_idx.
-- Empty filters match everything; lease is '', 'live' or 'expired';
-- has_cursor false reads the first page.
SELECT c.job_id,
       (CASE WHEN c.state = 'FAILED' THEN 'failed'
             WHEN c.state = 'CLAIMED' AND c.lease_until > now() THEN 'in-flight'
             WHEN c.state = 'CLAIMED' THEN 'lease-expired'
             ELSE coalesce(j.status, 'committed') END)::text AS state,
       c.state AS claim_state, c.source_bucket, c.source_key, c.owner, c.lease_until, c.attempts,
       coalesce(c.last_error, '')::text AS last_error, c.failure_cause,
       c.created_at, c.updated_at,
       coalesce(j.target_table, '')::text AS target_table,
       coalesce(j.pipeline_version, '')::text AS pipeline_version,
       coalesce(j.feature_count, 0)::bigint AS feature_count,
       coalesce(j.total_area_m2, 0)::float8 AS total_area_m2,
       j.write_seconds, j.committed_at,
       coalesce((SELECT string_agg(DISTINCT x.method, '+' ORDER BY x.method) FROM job_crs x WHERE x.job_id = c.job_id), '')::text AS crs_method
FROM claims c
LEFT JOIN jobs j ON j.job_id = c.job_id
WHERE (@claim_state::text = '' OR c.state = @claim_state::text)
  AND (@lease::text = '' OR (c.lease_until > now()) = (@lease::text = 'live'))
  AND (@status::text = '' OR j.status = @status::text)
  AND (@target::text = '' OR j.target_table = @target::text)
  AND (@bucket::text = '' OR c.source_bucket = @bucket::text)
  AND (@key_prefix::text = '' OR starts_with(c.source_key, @key_prefix::text))
  AND c.created_at >= @since::timestamptz
  AND (NOT @has_cursor::boolean OR (c.created_at, c.job_id) < (@cursor_at::timestamptz, @cursor_id::text))
ORDER BY c.created_at DESC, c.job_id DESC
LIMIT @max_rows;

-- name: ConsoleJob :one
-- ConsoleJob is one job's claim and, once committed, its ledger row and
-- its source's current job: the one read of a job, for the console's job
-- page and `geoingest jobs show`.
SELECT c.job_id,
       (CASE WHEN c.state = 'FAILED' THEN 'failed'
             WHEN c.state = 'CLAIMED' AND c.lease_until > now() THEN 'in-flight'
             WHEN c.state = 'CLAIMED' THEN 'lease-expired'
             ELSE coalesce(j.status, 'committed') END)::text AS state,
       c.state AS claim_state, c.source_bucket, c.source_key, c.owner, c.lease_until, c.attempts,
       coalesce(c.last_error, '')::text AS last_error, c.failure_cause,
       c.created_at, c.updated_at,
       (j.job_id IS NOT NULL)::boolean AS committed,
       coalesce(j.status, '')::text AS status,
       coalesce(j.target_table, '')::text AS target_table,
       coalesce(j.pipeline, '')::text AS pipeline,
       coalesce(j.pipeline_version, '')::text AS pipeline_version,
       coalesce(j.version_token, '')::text AS version_token,
       coalesce(j.order_token, '')::text AS order_token,
       coalesce(j.params, '{}')::jsonb AS params,
       coalesce(j.content_hash, '')::text AS content_hash,
       coalesce(j.features_checksum, '')::text AS features_checksum,
       coalesce(j.feature_count, 0)::bigint AS feature_count,
       coalesce(j.total_area_m2, 0)::float8 AS total_area_m2,
       coalesce(j.source_srid, 0)::int AS source_srid,
       coalesce(j.encoding, '')::text AS encoding,
       coalesce(j.skipped_null, 0)::bigint AS skipped_null,
       coalesce(j.skipped_type, 0)::bigint AS skipped_type,
       coalesce(j.skipped_cast, 0)::bigint AS skipped_cast,
       coalesce(j.repaired_invalid, 0)::bigint AS repaired_invalid,
       coalesce(j.linearised_curves, 0)::bigint AS linearised_curves,
       coalesce(j.dropped_zm, 0)::bigint AS dropped_zm,
       j.write_seconds, j.committed_at,
       coalesce(s.current_job_id, '')::text AS source_current_job_id,
       coalesce((SELECT string_agg(DISTINCT x.method, '+' ORDER BY x.method) FROM job_crs x WHERE x.job_id = c.job_id), '')::text AS crs_method
FROM claims c
LEFT JOIN jobs j ON j.job_id = c.job_id
LEFT JOIN sources s ON s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                   AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version
WHERE c.job_id = @job_id;

-- name: ConsoleSourceHistory :many
-- ConsoleSourceHistory is the latest per_source jobs (generations) of each
-- of the sources given as parallel arrays, newest first, read off
-- jobs_source_idx.
SELECT i.ord::int AS ord, j.job_id, j.status, j.version_token, j.order_token,
       j.feature_count, j.total_area_m2, j.committed_at
FROM (SELECT unnest(@buckets::text[]) AS bucket, unnest(@keys::text[]) AS key,
             unnest(@targets::text[]) AS target, unnest(@versions::text[]) AS version,
             generate_series(1, cardinality(@buckets::text[])) AS ord) i
CROSS JOIN LATERAL (
    SELECT x.job_id, x.status, x.version_token, x.order_token, x.feature_count, x.total_area_m2, x.committed_at
    FROM jobs x
    WHERE x.source_bucket = i.bucket AND x.source_key = i.key
      AND x.target_table = i.target AND x.pipeline_version = i.version
    ORDER BY x.committed_at DESC, x.job_id DESC
    LIMIT @per_source
) j
ORDER BY i.ord, j.committed_at DESC, j.job_id DESC;

-- name: ConsoleSources :many
-- ConsoleSources lists sources, most recently changed first, one page:
-- keyset pagination on sources_updated_idx. The key columns come back
-- for the cursor.
SELECT s.source_bucket, s.source_key, s.target_table, s.pipeline_version,
       coalesce(s.current_job_id, '')::text AS current_job_id, s.updated_at,
       (SELECT count(*) FROM jobs j WHERE j.source_bucket = s.source_bucket AND j.source_key = s.source_key
          AND j.target_table = s.target_table AND j.pipeline_version = s.pipeline_version)::bigint AS generations,
       coalesce(c.feature_count, 0)::bigint AS feature_count, coalesce(c.total_area_m2, 0)::float8 AS total_area_m2
FROM sources s
LEFT JOIN jobs c ON c.job_id = s.current_job_id
WHERE (@target::text = '' OR s.target_table = @target::text)
  AND (@bucket::text = '' OR s.source_bucket = @bucket::text)
  AND (@key_prefix::text = '' OR starts_with(s.source_key, @key_prefix::text))
  AND (NOT @has_cursor::boolean OR (s.updated_at, s.source_bucket, s.source_key, s.target_table, s.pipeline_version)
       < (@cursor_at::timestamptz, @cursor_bucket::text, @cursor_key::text, @cursor_target::text, @cursor_version::text))
ORDER BY s.updated_at DESC, s.source_bucket DESC, s.source_key DESC, s.target_table DESC, s.pipeline_version DESC
LIMIT @max_rows;

-- name: ConsoleClaims :many
-- ConsoleClaims lists the claims not yet settled (CLAIMED), live leases
-- first, then by lease end, with the lease left by the database's clock.
SELECT c.job_id, (c.lease_until > now())::boolean AS live, c.source_bucket, c.source_key, c.owner,
       c.lease_until, greatest(extract(epoch FROM c.lease_until - now()), 0)::float8 AS lease_left_seconds,
       c.attempts, coalesce(c.last_error, '')::text AS last_error, c.created_at, c.updated_at
FROM claims c
WHERE c.state = 'CLAIMED'
ORDER BY (c.lease_until > now()) DESC, c.lease_until DESC, c.job_id
LIMIT @max_rows;

-- name: ConsoleStateCounts :many
-- ConsoleStateCounts counts jobs by console state: the claims not
-- committed by claim state and lease, the committed jobs by ledger status
-- (two aggregates, no join).
SELECT x.state::text AS state, sum(x.jobs)::bigint AS jobs
FROM (
    SELECT CASE WHEN c.state = 'FAILED' THEN 'failed'
                WHEN c.lease_until > now() THEN 'in-flight'
                ELSE 'lease-expired' END AS state,
           count(*) AS jobs
    FROM claims c
    WHERE c.state <> 'COMMITTED'
    GROUP BY 1
    UNION ALL
    SELECT j.status, count(*) FROM jobs j GROUP BY j.status
) x
GROUP BY 1
ORDER BY 1;

-- name: ConsoleStatus :one
-- ConsoleStatus is the database's clock, the number of sources with a
-- current generation, and when a report assignment was last stored.
SELECT now()::timestamptz AS now,
       (SELECT count(*) FROM sources WHERE current_job_id IS NOT NULL)::bigint AS sources_current,
       (SELECT max(assigned_at) FROM report_assignments)::timestamptz AS last_report_refresh;

-- name: ConsoleClaimEvents :many
-- ConsoleClaimEvents is the history of a job's claim, oldest first.
SELECT e.at, e.event, e.owner, e.attempt, e.lease_until, coalesce(e.error, '')::text AS error
FROM claim_events e
WHERE e.job_id = @job_id
ORDER BY e.seq;

-- name: JobIDsWithPrefix :many
-- JobIDsWithPrefix lists the ids of the claims and ledger rows that start
-- with @prefix, in order, at most @max_rows: how the CLI resolves a
-- shortened job id (ingest.ResolveJobID). The range reads the primary
-- keys' indexes (a job id is lowercase hex, which every collation orders
-- as "C" does, and 'g' follows every hex digit); starts_with checks the
-- prefix exactly. @prefix is a parameter, never part of the SQL.
SELECT x.job_id::text AS job_id FROM (
    SELECT c.job_id FROM claims c
    WHERE c.job_id >= @prefix::text AND c.job_id < @prefix::text || 'g' AND starts_with(c.job_id, @prefix::text)
    UNION
    SELECT j.job_id FROM jobs j
    WHERE j.job_id >= @prefix::text AND j.job_id < @prefix::text || 'g' AND starts_with(j.job_id, @prefix::text)
) x
ORDER BY x.job_id
LIMIT @max_rows::int;
