DROP FUNCTION IF EXISTS geoingest_area_by_intersection(text, text);
DROP FUNCTION IF EXISTS geoingest_area_by_point_on_surface(text, text);
DROP VIEW IF EXISTS geoingest_current_admin_units;
DROP VIEW IF EXISTS geoingest_current_parcels;
DROP FUNCTION IF EXISTS geoingest_newest_pipeline_version();
DROP FUNCTION IF EXISTS geoingest_property(jsonb, text);
