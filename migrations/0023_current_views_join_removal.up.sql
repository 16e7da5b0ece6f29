-- geoingest schema, version 23: a query of the current views that does
-- not read their ledger columns costs what the same query on parcels or
-- admin_units costs.
--
-- The current views add to each row its job_id and pipeline_version,
-- from the ledger (jobs by job_ref, then the source whose current job it
-- is). As inner joins, PostgreSQL had to run both lookups for every row
-- even when the query read neither column: a spatial join of the current
-- parcels in a box with the current admin units took 2-3x the same join
-- on one table at 3,000 sources, growing with the sources.
--
-- Every row the feature tables hold is of a current generation: a write
-- gate deletes the rows of the generation it replaces or retires in the
-- transaction that makes it so, and a fold moves rows and the ledger's
-- ref together. geoingest verify checks exactly this ("stray features").
-- So outer joins give the same rows, and on a unique key (jobs.job_ref,
-- sources.current_job_id) an outer join whose columns a query does not
-- read is removed by the planner. A stray row, which verify reports, now
-- shows in these views with a NULL job_id and pipeline_version instead of
-- being hidden.
CREATE OR REPLACE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2
FROM geoingest_store.parcels p
LEFT JOIN jobs j ON j.job_ref = p.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';

CREATE OR REPLACE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2
FROM geoingest_store.admin_units a
LEFT JOIN jobs j ON j.job_ref = a.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';
