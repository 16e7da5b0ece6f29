DROP TABLE job_crs;
DELETE FROM spatial_ref_sys WHERE srid IN (SELECT srid FROM custom_crs);
DROP TABLE custom_crs;
