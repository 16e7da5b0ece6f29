-- The quarantine (migration 0030, ingest/quarantine.go).

-- name: QuarantineByJob :many
-- QuarantineByJob lists the jobs with quarantined features, newest first,
-- with their counts by rule (a JSON object).
SELECT q.job_id, j.source_bucket, j.source_key, j.target_table, j.status, j.committed_at,
       j.feature_count, sum(q.n)::bigint AS quarantined,
       jsonb_object_agg(q.rule, q.n)::jsonb AS by_rule
FROM (SELECT job_id, rule, count(*) AS n FROM geoingest_quarantine GROUP BY job_id, rule) q
JOIN jobs j USING (job_id)
GROUP BY q.job_id, j.source_bucket, j.source_key, j.target_table, j.status, j.committed_at, j.feature_count
ORDER BY j.committed_at DESC, q.job_id
LIMIT @max_jobs;

-- name: QuarantineCountsByRule :many
-- QuarantineCountsByRule counts a job's quarantined features by rule.
SELECT rule, count(*)::bigint AS n FROM geoingest_quarantine WHERE job_id = @job_id GROUP BY rule ORDER BY rule;

-- name: QuarantinedFeatures :many
-- QuarantinedFeatures pages through a job's quarantined features in
-- file order (layer, index), after the given one: their attributes, and
-- their geometry as GeoJSON in EPSG:4326 where it can be transformed
-- (else in its own CRS), with that SRID.
SELECT q.feature_index, q.layer, q.rule, q.reason, q.properties,
       coalesce(ST_AsGeoJSON(g.out), '')::text AS geojson, coalesce(ST_SRID(g.out), 0)::int AS srid
FROM geoingest_quarantine q
CROSS JOIN LATERAL (SELECT CASE WHEN ST_SRID(q.geom) <> 4326
                                     AND EXISTS (SELECT 1 FROM spatial_ref_sys s WHERE s.srid = ST_SRID(q.geom))
                                THEN ST_Transform(q.geom, 4326) ELSE q.geom END) g(out)
WHERE q.job_id = @job_id AND (q.layer, q.feature_index) > (@after_layer::text, @after_index::bigint)
  AND (@only_index::bigint < 0 OR q.feature_index = @only_index)
ORDER BY q.layer, q.feature_index
LIMIT @max_rows;

-- name: VerifyQuarantine :many
-- VerifyQuarantine lists the jobs whose quarantine disagrees with their
-- ledger row: the rows held against jobs.quarantined, and that against
-- the features the policies left out (skipped_null + skipped_type +
-- skipped_cast).
SELECT j.job_id, j.quarantined::bigint AS ledger, (j.skipped_null + j.skipped_type + j.skipped_cast)::bigint AS skipped,
       coalesce(q.n, 0)::bigint AS held
FROM jobs j
LEFT JOIN (SELECT job_id, count(*) AS n FROM geoingest_quarantine GROUP BY job_id) q USING (job_id)
WHERE j.quarantined IS NOT NULL
  AND (j.quarantined <> coalesce(q.n, 0) OR j.quarantined <> j.skipped_null + j.skipped_type + j.skipped_cast);

-- name: VerifyQuarantineTotal :one
SELECT count(*)::bigint AS n FROM geoingest_quarantine;
