-- name: TableSummary :many
-- TableSummary reports, per feature table, the rows of current generations,
-- how many jobs they come from and their total area on the spheroid.
SELECT 'parcels'::text AS target_table, count(*)::bigint AS features,
       count(DISTINCT p.job_id)::bigint AS jobs,
       coalesce(sum(ST_Area(p.geom::geography)), 0)::float8 AS area_m2
FROM parcels p JOIN jobs j ON j.job_id = p.job_id AND j.status = 'current'
UNION ALL
SELECT 'admin_units'::text, count(*)::bigint, count(DISTINCT a.job_id)::bigint,
       coalesce(sum(ST_Area(a.geom::geography)), 0)::float8
FROM admin_units a JOIN jobs j ON j.job_id = a.job_id AND j.status = 'current';
