-- name: AreaByPointOnSurface :many
-- AreaByPointOnSurface runs the report function of migration 0002. A NULL
-- pipeline version means the newest.
SELECT r.admin_unit::text AS admin_unit, r.parcels::bigint AS parcels,
       r.area_m2::float8 AS area_m2, r.area_ha::float8 AS area_ha
FROM geoingest_area_by_point_on_surface(@admin_key::text, sqlc.narg(pipeline_version)::text) r;

-- name: AreaByIntersection :many
SELECT r.admin_unit::text AS admin_unit, r.parcels::bigint AS parcels,
       r.area_m2::float8 AS area_m2, r.area_ha::float8 AS area_ha
FROM geoingest_area_by_intersection(@admin_key::text, sqlc.narg(pipeline_version)::text) r;

-- name: NewestPipelineVersion :one
SELECT coalesce(geoingest_newest_pipeline_version(), '')::text AS version;

-- name: VerifyCurrentJobs :many
-- VerifyCurrentJobs compares, for every current job, the ledger's feature
-- count, total area and checksum with what its target table holds for the
-- job. area_m2 is each row's area as the writer computed it (migration
-- 0007); area_off counts the rows whose area_m2 is missing, or, in a
-- sample of one row in 16 (by feature_index), differs from PostGIS's own
-- ST_Area(geom::geography) by more than rel_tol of itself plus abs_tol m²
-- (geodesic's tolerance: the writer measures small polygons its own way,
-- and GeographicLib rounds to about 1e-4 m²): a writer's area bug cannot
-- hide, at a sixteenth of the cost of measuring every row.
WITH held AS (
    SELECT f.target_table, f.job_ref, count(*) AS n, sum(f.area_m2) AS area,
           sum(geoingest_row_hash(f.feature_index, f.properties, f.geom)) AS checksum,
           count(*) FILTER (WHERE f.area_m2 IS NULL
                               OR (f.feature_index % 16 = 0
                                   AND abs(f.area_m2 - ST_Area(f.geom::geography)) > sqlc.arg(rel_tol)::float8 * abs(f.area_m2) + sqlc.arg(abs_tol)::float8)) AS area_off
    FROM geoingest_features f GROUP BY f.target_table, f.job_ref
)
SELECT j.job_id, j.target_table, j.source_bucket, j.source_key,
       j.feature_count AS ledger_count, j.total_area_m2 AS ledger_area_m2,
       j.features_checksum AS ledger_checksum,
       coalesce(h.n, 0)::bigint AS held_count, coalesce(h.area, 0)::float8 AS held_area_m2,
       coalesce(h.checksum, 0)::text AS held_checksum, coalesce(h.area_off, 0)::bigint AS area_off
FROM jobs j
LEFT JOIN held h ON h.job_ref = j.job_ref AND h.target_table = j.target_table
WHERE j.status = 'current'
ORDER BY j.job_id;

-- name: VerifyStrayFeatures :many
-- VerifyStrayFeatures lists, per table and job, feature rows whose job
-- is missing from the ledger, is not current, or targets the other table.
-- job_status is empty when the job is missing, and job_id is then
-- "job_ref N".
SELECT f.target_table, coalesce(j.job_id, 'job_ref ' || f.job_ref)::text AS job_id,
       coalesce(j.status, '')::text AS job_status, count(*)::bigint AS n
FROM geoingest_features f LEFT JOIN jobs j ON j.job_ref = f.job_ref
WHERE j.job_id IS NULL OR j.status <> 'current' OR j.target_table <> f.target_table
GROUP BY f.target_table, f.job_ref, j.job_id, j.status
ORDER BY 1, 2;

-- name: VerifySources :many
-- VerifySources lists disagreements between sources and the ledger: a
-- source with more than one current job; a current job that is not its
-- source's current_job_id; a current_job_id whose job is missing, not
-- current, or belongs to another source. problem names which.
SELECT 'two current generations'::text AS problem, j.job_id,
       j.source_bucket, j.source_key, j.target_table, j.pipeline_version
FROM jobs j
WHERE j.status = 'current'
  AND EXISTS (SELECT 1 FROM jobs o
              WHERE o.status = 'current' AND o.job_id <> j.job_id
                AND o.source_bucket = j.source_bucket AND o.source_key = j.source_key
                AND o.target_table = j.target_table AND o.pipeline_version = j.pipeline_version)
UNION ALL
SELECT 'current job is not its source''s current_job_id', j.job_id,
       j.source_bucket, j.source_key, j.target_table, j.pipeline_version
FROM jobs j
WHERE j.status = 'current'
  AND NOT EXISTS (SELECT 1 FROM sources s
                  WHERE s.current_job_id = j.job_id
                    AND s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                    AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version)
UNION ALL
SELECT 'source''s current_job_id is not a current job of that source', s.current_job_id,
       s.source_bucket, s.source_key, s.target_table, s.pipeline_version
FROM sources s
LEFT JOIN jobs j ON j.job_id = s.current_job_id
WHERE s.current_job_id IS NOT NULL
  AND (j.job_id IS NULL OR j.status <> 'current'
       OR j.source_bucket <> s.source_bucket OR j.source_key <> s.source_key
       OR j.target_table <> s.target_table OR j.pipeline_version <> s.pipeline_version)
ORDER BY 2, 1;

-- name: VerifyClaims :many
-- VerifyClaims lists disagreements between claims and the ledger: a ledger
-- job without a COMMITTED claim (claim_state empty when there is no claim),
-- and a COMMITTED claim without a ledger row.
SELECT j.job_id, coalesce(c.state, '')::text AS claim_state, true AS in_ledger
FROM jobs j LEFT JOIN claims c ON c.job_id = j.job_id
WHERE c.state IS DISTINCT FROM 'COMMITTED'
UNION ALL
SELECT c.job_id, c.state, false
FROM claims c
WHERE c.state = 'COMMITTED' AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = c.job_id)
ORDER BY 1;

-- name: VerifyCounts :one
-- VerifyCounts is what verify looked at.
SELECT (SELECT count(*) FROM jobs)::bigint AS jobs,
       (SELECT count(*) FROM jobs WHERE status = 'current')::bigint AS current_jobs,
       (SELECT count(*) FROM sources)::bigint AS sources,
       (SELECT count(*) FROM claims)::bigint AS claims,
       (SELECT count(*) FROM parcels)::bigint AS parcels,
       (SELECT count(*) FROM admin_units)::bigint AS admin_units;

-- name: JobSnapshot :one
-- JobSnapshot is a job's ledger row, its claim state and its source's
-- current job.
SELECT j.job_id, j.status, j.committed_at, j.feature_count, j.total_area_m2, j.content_hash,
       j.features_checksum, j.target_table, j.source_bucket, j.source_key, j.pipeline_version, j.params,
       coalesce(c.state, '')::text AS claim_state,
       coalesce(s.current_job_id, '')::text AS source_current_job_id
FROM jobs j
LEFT JOIN claims c ON c.job_id = j.job_id
LEFT JOIN sources s ON s.source_bucket = j.source_bucket AND s.source_key = j.source_key
                   AND s.target_table = j.target_table AND s.pipeline_version = j.pipeline_version
WHERE j.job_id = @job_id;

-- name: JobFeaturesChecksum :one
-- JobFeaturesChecksum is the number of a job's rows in its target table,
-- their area on the spheroid and their checksum (see geoingest_row_hash):
-- any change to a row changes it.
SELECT count(*)::bigint AS n,
       coalesce(sum(f.area_m2), 0)::float8 AS area_m2,
       coalesce(sum(geoingest_row_hash(f.feature_index, f.properties, f.geom)), 0)::text AS checksum
FROM geoingest_features f
WHERE f.target_table = @target_table::text
  AND f.job_ref = (SELECT j.job_ref FROM jobs j WHERE j.job_id = @job_id::text);

-- name: AreaReportAsOf :many
-- AreaReportAsOf is the area report by admin key value of a pipeline version as
-- of a time (migration 0042), '(unassigned)' last.
SELECT a.admin_unit::text AS admin_unit, a.parcels::bigint AS parcels, a.area_m2::float8 AS area_m2, a.area_ha::float8 AS area_ha
FROM geoingest_area_as_of(@at::timestamptz, @admin_key::text, @pipeline_version::text, @intersection::boolean) a;

-- name: ReportTotalAsOf :one
-- ReportTotalAsOf is ReportTotal as of a time: what the ledger recorded
-- for the parcel jobs of a pipeline version that were current then.
SELECT coalesce(sum(j.feature_count), 0)::bigint AS parcels,
       coalesce(sum(j.total_area_m2), 0)::float8 AS area_m2
FROM jobs j
WHERE j.job_id IN (SELECT DISTINCT h.job_id FROM geoingest_features_as_of('parcels', @at::timestamptz) h
                   WHERE h.pipeline_version = @pipeline_version::text);
