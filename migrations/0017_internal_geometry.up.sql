-- geoingest schema, version 17: no internal table is listed as a layer.
--
-- GIS clients (GDAL's PostgreSQL driver, and so QGIS, ogrinfo and ogr2ogr)
-- list every relation with a column of type geometry or geography, and
-- PostGIS's geometry_columns view lists the same. report_admin_generations
-- (migration 0015) keeps each admin generation's coverage, a cache of the
-- report refresh that no analyst reads, and was listed as a layer beside
-- parcels and admin_units.
--
-- geoingest_internal_geometry is a domain over geometry for such caches:
-- a value of it is a geometry to every PostGIS function (a domain coerces
-- implicitly to its base type), but the column is not of type geometry,
-- so no client lists it. The change of type relabels the column without
-- rewriting it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_type t WHERE t.typname = 'geoingest_internal_geometry'
                   AND t.typnamespace = current_schema()::regnamespace) THEN
        CREATE DOMAIN geoingest_internal_geometry AS geometry;
    END IF;
END
$$;

ALTER TABLE report_admin_generations
    ALTER COLUMN coverage TYPE geoingest_internal_geometry;
