DROP FUNCTION IF EXISTS geoingest_feature_hash(bigint, jsonb, geometry);
DROP FUNCTION IF EXISTS geoingest_normalize(bytea, bigint, boolean);
DROP TABLE IF EXISTS admin_units;
DROP TABLE IF EXISTS parcels;
DROP TABLE IF EXISTS sources;
DROP TABLE IF EXISTS claims;
DROP TABLE IF EXISTS jobs;
