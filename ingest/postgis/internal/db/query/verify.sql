-- verify's incremental mode (Console.VerifyScope): the checks of the full
-- verify (report.sql, report_assignments.sql), restricted to what changed
-- since a time and/or to the sources whose key starts with a prefix. The
-- scope is:
--   sources: those changed since @since (sources.updated_at: a new current
--     generation, a delete), or with a job committed since (a superseded
--     version), whose key starts with @prefix;
--   jobs: every ledger job of those sources, and every job whose claim
--     changed since (claims.updated_at), with the same prefix.
-- Each query reads the scope through indexes (jobs_committed_idx,
-- claims_updated_idx and sources_updated_idx, migrations 0010 and 0012,
-- and the ledger's by source) and each job's rows by its job_ref, so its
-- cost follows what changed, not the size of the database. With @since
-- -infinity, the scope is every source whose key starts with @prefix.

-- name: VerifyScopeJobs :many
-- VerifyScopeJobs is, for every job in scope, its ledger row (in_ledger
-- false when it has only a claim), its claim state ('' when none), and
-- what the feature tables hold under its job_ref: in its target table
-- (count, area, checksum, and area_off as VerifyCurrentJobs counts it)
-- and in the other table (other_count).
WITH src AS MATERIALIZED (
    SELECT s.source_bucket, s.source_key, s.target_table, s.pipeline_version
    FROM sources s
    WHERE s.updated_at >= @since::timestamptz AND starts_with(s.source_key, @prefix::text)
    UNION
    SELECT j.source_bucket, j.source_key, j.target_table, j.pipeline_version
    FROM jobs j
    WHERE j.committed_at >= @since::timestamptz AND starts_with(j.source_key, @prefix::text)
), ids AS MATERIALIZED (
    SELECT j.job_id
    FROM src
    JOIN jobs j ON j.source_bucket = src.source_bucket AND j.source_key = src.source_key
               AND j.target_table = src.target_table AND j.pipeline_version = src.pipeline_version
    UNION
    SELECT c.job_id
    FROM claims c
    WHERE c.updated_at >= @since::timestamptz AND starts_with(c.source_key, @prefix::text)
)
SELECT ids.job_id, (j.job_id IS NOT NULL)::boolean AS in_ledger,
       coalesce(j.status, '')::text AS status, coalesce(j.target_table, '')::text AS target_table,
       coalesce(j.source_bucket, c.source_bucket, '')::text AS source_bucket,
       coalesce(j.source_key, c.source_key, '')::text AS source_key,
       coalesce(j.feature_count, 0)::bigint AS ledger_count, coalesce(j.total_area_m2, 0)::float8 AS ledger_area_m2,
       coalesce(j.features_checksum, '0')::text AS ledger_checksum,
       coalesce(c.state, '')::text AS claim_state,
       coalesce(h.n, 0)::bigint AS held_count, coalesce(h.area, 0)::float8 AS held_area_m2,
       coalesce(h.checksum, 0)::text AS held_checksum, coalesce(h.area_off, 0)::bigint AS area_off,
       coalesce(h.other, 0)::bigint AS other_count
FROM ids
LEFT JOIN jobs j ON j.job_id = ids.job_id
LEFT JOIN claims c ON c.job_id = ids.job_id
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE f.target_table = j.target_table) AS n,
           sum(f.area_m2) FILTER (WHERE f.target_table = j.target_table) AS area,
           sum(geoingest_row_hash(f.feature_index, f.properties, f.geom)) FILTER (WHERE f.target_table = j.target_table) AS checksum,
           count(*) FILTER (WHERE f.target_table = j.target_table
                              AND (f.area_m2 IS NULL
                                   OR (f.feature_index % 16 = 0
                                       AND abs(f.area_m2 - ST_Area(f.geom::geography)) > sqlc.arg(rel_tol)::float8 * abs(f.area_m2) + sqlc.arg(abs_tol)::float8))) AS area_off,
           count(*) FILTER (WHERE f.target_table <> j.target_table) AS other
    FROM geoingest_features f
    WHERE f.job_ref = j.job_ref
) h ON j.job_id IS NOT NULL
ORDER BY ids.job_id;

-- name: VerifyScopeSources :many
-- VerifyScopeSources is VerifySources for the sources in scope: a source
-- with more than one current job, a current job that is not its source's
-- current_job_id, a current_job_id whose job is missing, not current, or
-- of another source.
WITH src AS MATERIALIZED (
    SELECT s.source_bucket, s.source_key, s.target_table, s.pipeline_version
    FROM sources s
    WHERE s.updated_at >= @since::timestamptz AND starts_with(s.source_key, @prefix::text)
    UNION
    SELECT j.source_bucket, j.source_key, j.target_table, j.pipeline_version
    FROM jobs j
    WHERE j.committed_at >= @since::timestamptz AND starts_with(j.source_key, @prefix::text)
), cur AS MATERIALIZED (
    SELECT j.job_id, j.source_bucket, j.source_key, j.target_table, j.pipeline_version
    FROM src
    JOIN jobs j ON j.source_bucket = src.source_bucket AND j.source_key = src.source_key
               AND j.target_table = src.target_table AND j.pipeline_version = src.pipeline_version
    WHERE j.status = 'current'
)
SELECT 'two current generations'::text AS problem, c.job_id,
       c.source_bucket, c.source_key, c.target_table, c.pipeline_version
FROM cur c
WHERE EXISTS (SELECT 1 FROM cur o
              WHERE o.job_id <> c.job_id
                AND o.source_bucket = c.source_bucket AND o.source_key = c.source_key
                AND o.target_table = c.target_table AND o.pipeline_version = c.pipeline_version)
UNION ALL
SELECT 'current job is not its source''s current_job_id', c.job_id,
       c.source_bucket, c.source_key, c.target_table, c.pipeline_version
FROM cur c
WHERE NOT EXISTS (SELECT 1 FROM sources s
                  WHERE s.current_job_id = c.job_id
                    AND s.source_bucket = c.source_bucket AND s.source_key = c.source_key
                    AND s.target_table = c.target_table AND s.pipeline_version = c.pipeline_version)
UNION ALL
SELECT 'source''s current_job_id is not a current job of that source', s.current_job_id,
       s.source_bucket, s.source_key, s.target_table, s.pipeline_version
FROM src
JOIN sources s ON s.source_bucket = src.source_bucket AND s.source_key = src.source_key
              AND s.target_table = src.target_table AND s.pipeline_version = src.pipeline_version
LEFT JOIN jobs j ON j.job_id = s.current_job_id
WHERE s.current_job_id IS NOT NULL
  AND (j.job_id IS NULL OR j.status <> 'current'
       OR j.source_bucket <> s.source_bucket OR j.source_key <> s.source_key
       OR j.target_table <> s.target_table OR j.pipeline_version <> s.pipeline_version)
ORDER BY 2, 1;

-- name: VerifyScopeReportAssignments :many
-- VerifyScopeReportAssignments is VerifyReportAssignments for the current
-- parcel jobs of the sources in scope.
WITH src AS MATERIALIZED (
    SELECT s.source_bucket, s.source_key, s.target_table, s.pipeline_version
    FROM sources s
    WHERE s.updated_at >= @since::timestamptz AND starts_with(s.source_key, @prefix::text)
    UNION
    SELECT j.source_bucket, j.source_key, j.target_table, j.pipeline_version
    FROM jobs j
    WHERE j.committed_at >= @since::timestamptz AND starts_with(j.source_key, @prefix::text)
), g AS MATERIALIZED (
    SELECT v.pipeline_version, geoingest_admin_generation(v.pipeline_version) AS gen
    FROM (SELECT DISTINCT src.pipeline_version FROM src WHERE src.target_table = 'parcels') v
)
SELECT j.job_id, j.pipeline_version, j.feature_count AS ledger_count, j.total_area_m2 AS ledger_area_m2,
       (r.parcel_job_id IS NOT NULL)::boolean AS assigned,
       coalesce((SELECT sum(c.pos_parcels) FROM report_assignment_cells c
                 WHERE c.parcel_job_id = r.parcel_job_id AND c.admin_generation = r.admin_generation), 0)::bigint AS cell_count,
       coalesce((SELECT sum(c.pos_area_m2) FROM report_assignment_cells c
                 WHERE c.parcel_job_id = r.parcel_job_id AND c.admin_generation = r.admin_generation), 0)::float8 AS cell_area_m2
FROM src
JOIN sources s ON s.source_bucket = src.source_bucket AND s.source_key = src.source_key
              AND s.target_table = src.target_table AND s.pipeline_version = src.pipeline_version
JOIN jobs j ON j.job_id = s.current_job_id
JOIN g ON g.pipeline_version = s.pipeline_version
LEFT JOIN report_assignments r ON r.parcel_job_id = j.job_id AND r.admin_generation = g.gen
WHERE s.target_table = 'parcels'
ORDER BY j.job_id;

-- name: VerifyTypedJobs :many
-- VerifyTypedJobs lists the rows whose stored typed columns disagree with
-- their records, per job (geoingest_verify_typed, migrations 0043, 0055,
-- 0056): of the jobs in @job_ids only (verify's incremental mode), or of
-- every job when @job_ids is NULL (a nil slice: the full verify).
SELECT v.job_id::text AS job_id, v.target_table::text AS target_table, v.n::bigint AS n
FROM geoingest_verify_typed(@job_ids::text[]) v;
