DROP VIEW IF EXISTS geoingest_typed_parcels;
DROP VIEW IF EXISTS geoingest_typed_admin_units;
DROP FUNCTION geoingest_apply_typed_view(text, jsonb);
ALTER TABLE jobs DROP COLUMN skipped_cast;
