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
-- count and total area with what its target table holds for the job.
WITH held AS (
    SELECT 'parcels'::text AS target_table, p.job_id, count(*) AS n,
           sum(ST_Area(p.geom::geography)) AS area,
           sum(geoingest_feature_hash(p.feature_index, p.properties, p.geom)) AS checksum
    FROM parcels p GROUP BY p.job_id
    UNION ALL
    SELECT 'admin_units'::text, a.job_id, count(*), sum(ST_Area(a.geom::geography)),
           sum(geoingest_feature_hash(a.feature_index, a.properties, a.geom))
    FROM admin_units a GROUP BY a.job_id
)
SELECT j.job_id, j.target_table, j.source_bucket, j.source_key,
       j.feature_count AS ledger_count, j.total_area_m2 AS ledger_area_m2,
       j.features_checksum AS ledger_checksum,
       coalesce(h.n, 0)::bigint AS held_count, coalesce(h.area, 0)::float8 AS held_area_m2,
       coalesce(h.checksum, 0)::text AS held_checksum
FROM jobs j
LEFT JOIN held h ON h.job_id = j.job_id AND h.target_table = j.target_table
WHERE j.status = 'current'
ORDER BY j.job_id;

-- name: VerifyStrayFeatures :many
-- VerifyStrayFeatures lists, per table and job id, feature rows whose job
-- is missing from the ledger, is not current, or targets the other table.
-- job_status is empty when the job is missing.
SELECT 'parcels'::text AS target_table, p.job_id, coalesce(j.status, '')::text AS job_status,
       count(*)::bigint AS n
FROM parcels p LEFT JOIN jobs j ON j.job_id = p.job_id
WHERE j.job_id IS NULL OR j.status <> 'current' OR j.target_table <> 'parcels'
GROUP BY p.job_id, j.status
UNION ALL
SELECT 'admin_units'::text, a.job_id, coalesce(j.status, '')::text, count(*)::bigint
FROM admin_units a LEFT JOIN jobs j ON j.job_id = a.job_id
WHERE j.job_id IS NULL OR j.status <> 'current' OR j.target_table <> 'admin_units'
GROUP BY a.job_id, j.status
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

-- name: ParcelsChecksum :one
-- ParcelsChecksum is the number of a job's parcels, their area on the
-- spheroid, and an md5 over feature_index, md5(properties) and EWKB of
-- every row in feature_index order: any change to a row changes it.
SELECT count(*)::bigint AS n,
       coalesce(sum(ST_Area(p.geom::geography)), 0)::float8 AS area_m2,
       coalesce(sum(geoingest_feature_hash(p.feature_index, p.properties, p.geom)), 0)::text AS checksum
FROM parcels p WHERE p.job_id = @job_id;

-- name: AdminUnitsChecksum :one
-- AdminUnitsChecksum is ParcelsChecksum for admin_units.
SELECT count(*)::bigint AS n,
       coalesce(sum(ST_Area(a.geom::geography)), 0)::float8 AS area_m2,
       coalesce(sum(geoingest_feature_hash(a.feature_index, a.properties, a.geom)), 0)::text AS checksum
FROM admin_units a WHERE a.job_id = @job_id;
