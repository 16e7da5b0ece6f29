-- Undo version 6: the reports go back to migration 0002's definitions
-- (computed from the feature tables on every call), and the assignment
-- tables and their functions are dropped.
DROP FUNCTION IF EXISTS geoingest_admin_overlaps(text, text);
DROP FUNCTION IF EXISTS geoingest_admin_duplicate_keys(text, text);

CREATE OR REPLACE FUNCTION geoingest_area_by_point_on_surface(admin_key text DEFAULT 'name',
                                                   pipeline_version text DEFAULT NULL)
RETURNS TABLE (admin_unit text, parcels bigint, area_m2 double precision, area_ha double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(geoingest_property(a.properties, $1), ''),
           sum(x.n)::bigint,
           sum(x.area)::double precision,
           sum(x.area)::double precision / 10000
    FROM geoingest_current_admin_units a
    CROSS JOIN LATERAL (
        SELECT count(*) AS n, coalesce(sum(ST_Area(p.geom::geography)), 0) AS area
        FROM geoingest_current_parcels p
        WHERE p.pipeline_version = a.pipeline_version
          AND p.geom && a.geom
          AND ST_Contains(a.geom, ST_PointOnSurface(p.geom))
    ) x
    WHERE a.pipeline_version = (SELECT coalesce($2, geoingest_newest_pipeline_version()))
    GROUP BY 1
    ORDER BY 1
$$;

-- geoingest_area_by_intersection splits parcels by admin unit: for each
-- value of the admin units' property admin_key, the area on the spheroid
-- of ST_Intersection(unit, parcel) summed over the parcels that overlap it,
-- and the number of those parcels. A parcel overlaps a unit when their
-- intersection has an area: parcels that only touch the unit's boundary
-- neither count nor add area. A parcel wholly covered by the unit counts
-- its whole area without computing the intersection. Current generations
-- of pipeline_version only, ordered by admin_unit, as in
-- geoingest_area_by_point_on_surface. Plan: per admin unit, candidate
-- parcels from parcels_geom_idx (ST_Intersects carries the && index
-- condition; the unit's geometry is prepared once for the exact tests).
CREATE OR REPLACE FUNCTION geoingest_area_by_intersection(admin_key text DEFAULT 'name',
                                               pipeline_version text DEFAULT NULL)
RETURNS TABLE (admin_unit text, parcels bigint, area_m2 double precision, area_ha double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(geoingest_property(a.properties, $1), ''),
           sum(x.n)::bigint,
           sum(x.area)::double precision,
           sum(x.area)::double precision / 10000
    FROM geoingest_current_admin_units a
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE i.area > 0) AS n, coalesce(sum(i.area), 0) AS area
        FROM (
            SELECT CASE WHEN ST_Covers(a.geom, p.geom) THEN ST_Area(p.geom::geography)
                        ELSE ST_Area(ST_Intersection(a.geom, p.geom)::geography) END AS area
            FROM geoingest_current_parcels p
            WHERE p.pipeline_version = a.pipeline_version
              AND ST_Intersects(a.geom, p.geom)
        ) i
    ) x
    WHERE a.pipeline_version = (SELECT coalesce($2, geoingest_newest_pipeline_version()))
    GROUP BY 1
    ORDER BY 1
$$;

DROP FUNCTION IF EXISTS geoingest_report_cells(text);
DROP FUNCTION IF EXISTS geoingest_report_compute(text, bigint[], bigint[]);
DROP FUNCTION IF EXISTS geoingest_overlapping_units(bigint[]);
DROP FUNCTION IF EXISTS geoingest_admin_unit_ids(text);
DROP FUNCTION IF EXISTS geoingest_admin_generation(text);
DROP FUNCTION IF EXISTS geoingest_generation_name(text[]);
DROP FUNCTION IF EXISTS geoingest_admin_job_ids(text);
DROP VIEW IF EXISTS geoingest_report_parcels;
DROP TABLE IF EXISTS report_assignment_cells;
DROP TABLE IF EXISTS report_assignments;
