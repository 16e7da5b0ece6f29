-- geoingest schema, version 2: the admin-unit area report, as SQL that
-- analysts can run directly.
--
-- Reports count only current generations: a feature row counts when its
-- job is the current job of its source (sources.current_job_id), for one
-- pipeline version. Superseded, replaced and retired jobs, and rows that
-- belong to no job, never count. `geoingest verify` checks that
-- sources.current_job_id and jobs.status agree.
--
--   SELECT * FROM geoingest_area_by_point_on_surface();            -- key 'name', newest version
--   SELECT * FROM geoingest_area_by_intersection('admin_id', '2'); -- key admin_id, version 2
--
-- The admin key is a value (the name of a property of the admin units,
-- read with properties->>key), never an identifier spliced into SQL.

-- geoingest_newest_pipeline_version is the pipeline version that reports
-- count by default: of the versions that have a current generation, the
-- one introduced last (whose earliest job was committed last). A new-key
-- backfill starts after the version it replaces, so it becomes the default
-- as soon as it has written something; pass a version to compare. NULL
-- when nothing is current.
CREATE FUNCTION geoingest_newest_pipeline_version() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT j.pipeline_version
    FROM jobs j
    WHERE j.pipeline_version IN (SELECT s.pipeline_version FROM sources s
                                 WHERE s.current_job_id IS NOT NULL)
    GROUP BY j.pipeline_version
    ORDER BY min(j.committed_at) DESC, j.pipeline_version DESC
    LIMIT 1
$$;

-- geoingest_property returns the property key of a feature's properties
-- as text: the member named exactly key, else the first member whose name
-- equals key case-insensitively (ogr2ogr lower-cases column names, so an
-- analyst's "name" finds a shapefile's NAME). NULL when there is none.
CREATE FUNCTION geoingest_property(properties jsonb, key text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(properties ->> key,
                    (SELECT e.value FROM jsonb_each_text(properties) e
                     WHERE lower(e.key) = lower(geoingest_property.key)
                     ORDER BY e.key LIMIT 1))
$$;

-- geoingest_current_parcels: the parcels of current generations, with the
-- pipeline version that wrote them.
CREATE VIEW geoingest_current_parcels AS
SELECT p.id, p.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version
FROM parcels p
JOIN sources s ON s.current_job_id = p.job_id AND s.target_table = 'parcels';

-- geoingest_current_admin_units: the admin units of current generations.
CREATE VIEW geoingest_current_admin_units AS
SELECT a.id, a.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version
FROM admin_units a
JOIN sources s ON s.current_job_id = a.job_id AND s.target_table = 'admin_units';

-- geoingest_area_by_point_on_surface assigns each whole parcel to the admin
-- unit that contains its ST_PointOnSurface and sums parcel areas on the
-- spheroid (ST_Area of geography) per value of the admin units' property
-- admin_key (see geoingest_property). Only parcels and admin units of
-- current generations of pipeline_version (NULL:
-- geoingest_newest_pipeline_version()) count.
-- Parcels whose point lies in no unit are left out; a unit with no parcel
-- appears with 0. Rows come ordered by admin_unit.
--
-- Plan: per admin unit (aggregated per unit in a lateral subquery, so
-- no parcel row is sorted), the parcels whose bounding box overlaps the
-- unit's come from parcels_geom_idx (p.geom && a.geom is implied by the
-- containment of a point of p, and spelt out so the index can serve it);
-- then the exact test. LANGUAGE sql, STABLE, a single SELECT and not
-- STRICT: the planner inlines it, so EXPLAIN of a call shows that plan.
CREATE FUNCTION geoingest_area_by_point_on_surface(admin_key text DEFAULT 'name',
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
CREATE FUNCTION geoingest_area_by_intersection(admin_key text DEFAULT 'name',
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
