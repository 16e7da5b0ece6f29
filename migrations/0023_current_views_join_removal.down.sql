CREATE OR REPLACE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2
FROM geoingest_store.parcels p
JOIN jobs j ON j.job_ref = p.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';

CREATE OR REPLACE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2
FROM geoingest_store.admin_units a
JOIN jobs j ON j.job_ref = a.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';
