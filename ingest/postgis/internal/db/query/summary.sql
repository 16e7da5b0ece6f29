-- name: TableSummary :many
-- TableSummary reports, per feature table, the rows of current generations,
-- how many jobs they come from and their total area on the spheroid, summed
-- in id order so that the same rows always give the same total (a parallel
-- plan over the partitions would add them in any order).
SELECT t.target_table::text AS target_table, count(f.job_ref)::bigint AS features,
       count(DISTINCT f.job_ref)::bigint AS jobs,
       coalesce(sum(f.area_m2 ORDER BY f.id), 0)::float8 AS area_m2
FROM (VALUES ('parcels'), ('admin_units')) t (target_table)
LEFT JOIN (geoingest_features f JOIN jobs j ON j.job_ref = f.job_ref AND j.status = 'current')
       ON f.target_table = t.target_table
GROUP BY t.target_table
ORDER BY t.target_table DESC;
