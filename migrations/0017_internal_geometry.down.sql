-- Back to version 16: report_admin_generations.coverage is a geometry
-- column again (and listed by GIS clients as a layer).
ALTER TABLE report_admin_generations
    ALTER COLUMN coverage TYPE geometry(Geometry, 4326);
DROP DOMAIN IF EXISTS geoingest_internal_geometry;
