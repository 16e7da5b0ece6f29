-- Declarations that sqlc needs in order to type-check our queries but that
-- the migrations do not create. This file is not a migration and is never
-- run.
--
-- geoingest_staging is the temporary table that the write gate COPYs
-- features in a CRS other than EPSG:4326 into before
-- geoingest_insert_staged transforms them into the job's table (migration
-- 0005); it is created inside the write-gate transaction by the query
-- CreateStaging (ON COMMIT DROP).
CREATE TABLE geoingest_staging (
    feature_index bigint NOT NULL,
    layer         text NOT NULL,
    properties    jsonb NOT NULL,
    wkb           bytea NOT NULL
);

-- spatial_ref_sys is created by CREATE EXTENSION postgis.
CREATE TABLE spatial_ref_sys (
    srid      integer NOT NULL PRIMARY KEY,
    auth_name varchar(256),
    auth_srid integer,
    srtext    varchar(2048),
    proj4text varchar(2048)
);
