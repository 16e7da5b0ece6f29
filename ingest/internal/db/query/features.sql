-- name: CreateStaging :exec
-- CreateStaging creates the per-transaction staging table that raw features
-- are COPYed into. It is dropped at commit or rollback.
CREATE TEMP TABLE geoingest_staging (
    feature_index bigint NOT NULL,
    layer         text NOT NULL,
    properties    jsonb NOT NULL,
    wkb           bytea NOT NULL
) ON COMMIT DROP;

-- name: InsertParcelsFromStaging :one
-- InsertParcelsFromStaging normalises the staged features into parcels for
-- a job and returns how many rows it wrote, their total area on the
-- spheroid, their checksum (see geoingest_feature_hash), how many were repaired and how many were dropped because
-- nothing polygonal was left.
WITH src AS MATERIALIZED (
    SELECT s.feature_index, s.layer, s.properties, n.geom, n.repaired
    FROM geoingest_staging s
    CROSS JOIN LATERAL geoingest_normalize(s.wkb, s.feature_index, @repair::boolean) n
), ins AS (
    INSERT INTO parcels (job_id, feature_index, layer, properties, geom)
    SELECT @job_id::text, src.feature_index, src.layer, src.properties, src.geom
    FROM src WHERE src.geom IS NOT NULL
    RETURNING ST_Area(parcels.geom::geography) AS area,
              geoingest_feature_hash(parcels.feature_index, parcels.properties, parcels.geom) AS h
)
SELECT (SELECT count(*) FROM ins)::bigint AS written,
       (SELECT coalesce(sum(area), 0) FROM ins)::float8 AS area_m2,
       (SELECT coalesce(sum(h), 0) FROM ins)::text AS features_checksum,
       (SELECT count(*) FROM src WHERE src.repaired)::bigint AS repaired,
       (SELECT count(*) FROM src WHERE src.geom IS NULL)::bigint AS collapsed;

-- name: InsertAdminUnitsFromStaging :one
-- InsertAdminUnitsFromStaging is InsertParcelsFromStaging for admin_units.
WITH src AS MATERIALIZED (
    SELECT s.feature_index, s.layer, s.properties, n.geom, n.repaired
    FROM geoingest_staging s
    CROSS JOIN LATERAL geoingest_normalize(s.wkb, s.feature_index, @repair::boolean) n
), ins AS (
    INSERT INTO admin_units (job_id, feature_index, layer, properties, geom)
    SELECT @job_id::text, src.feature_index, src.layer, src.properties, src.geom
    FROM src WHERE src.geom IS NOT NULL
    RETURNING ST_Area(admin_units.geom::geography) AS area,
              geoingest_feature_hash(admin_units.feature_index, admin_units.properties, admin_units.geom) AS h
)
SELECT (SELECT count(*) FROM ins)::bigint AS written,
       (SELECT coalesce(sum(area), 0) FROM ins)::float8 AS area_m2,
       (SELECT coalesce(sum(h), 0) FROM ins)::text AS features_checksum,
       (SELECT count(*) FROM src WHERE src.repaired)::bigint AS repaired,
       (SELECT count(*) FROM src WHERE src.geom IS NULL)::bigint AS collapsed;

-- name: DeleteParcelsByJob :execrows
DELETE FROM parcels WHERE job_id = @job_id;

-- name: DeleteAdminUnitsByJob :execrows
DELETE FROM admin_units WHERE job_id = @job_id;
