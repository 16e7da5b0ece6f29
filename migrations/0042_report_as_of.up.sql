-- geoingest schema, version 42: the area report as of a time
-- (docs/reports.md, "As of a time"): geoingest report area --as-of T.
--
-- The parcels and the admin units of a pipeline version as they were at
-- T (geoingest_features_as_of, migration 0033), counted by the
-- definition the stored cells follow (docs/reports.md): each parcel's
-- point on surface in the unit that contains it (on a shared boundary the
-- lowest unit; a unit is named by its feature_id, which is the id of the
-- row that first wrote it), its pieces in the units it meets, and its area
-- in no unit. Nothing is stored: the report is computed from the rows of
-- that time, unit by unit through no index, so it costs the parcels times
-- the units whose box meets them (seconds for 100,000 parcels).

CREATE FUNCTION geoingest_report_cells_as_of(at timestamptz, pipeline_version text)
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision, int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE
SET jit = off
AS $$
    WITH u AS MATERIALIZED (
        SELECT f.feature_id AS id, f.geom FROM geoingest_features_as_of('admin_units', $1) f
        WHERE f.pipeline_version = $2
    ), p AS MATERIALIZED (
        SELECT row_number() OVER () AS id, f.geom, f.area_m2 AS area, ST_PointOnSurface(f.geom) AS pt
        FROM geoingest_features_as_of('parcels', $1) f
        WHERE f.pipeline_version = $2
    ), m AS MATERIALIZED (
        -- every unit a parcel meets, with the parcel's area in it; unit
        -- by unit, so that PostGIS prepares each unit once for its
        -- parcels (its cache of the last geometry's prepared form)
        SELECT q.id, u.id AS unit_id, q.covers, ST_Intersects(u.geom, q.pt) AS pos,
               CASE WHEN q.covers THEN q.area ELSE ST_Area(ST_Intersection(u.geom, q.geom)::geography) END AS area
        FROM u
        CROSS JOIN LATERAL (SELECT p.id, p.geom, p.pt, p.area, ST_Covers(u.geom, p.geom) AS covers
                            FROM p WHERE p.geom && u.geom AND ST_Intersects(u.geom, p.geom) OFFSET 0) q
    ), pp AS MATERIALIZED (
        SELECT p.id, p.geom, p.area, coalesce(x.pos_unit, 0) AS pos_unit, x.id IS NOT NULL AS meets,
               coalesce(x.covered, false) AS covered, x.units
        FROM p
        LEFT JOIN (SELECT m.id, min(m.unit_id) FILTER (WHERE m.pos) AS pos_unit, bool_or(m.covers) AS covered,
                          array_agg(m.unit_id ORDER BY m.unit_id) AS units
                   FROM m GROUP BY m.id) x ON x.id = p.id
    ), g AS MATERIALIZED (
        -- the parcels across a border, grouped by the units they meet:
        -- each group's union is made once
        SELECT pp.id, pp.geom, pp.area, pp.units, dense_rank() OVER (ORDER BY pp.units) AS grp
        FROM pp
        WHERE pp.meets AND NOT pp.covered
    ), merged AS MATERIALIZED (
        SELECT x.grp, ST_Union(u.geom) AS geom
        FROM (SELECT DISTINCT g.grp, g.units FROM g) x
        JOIN u ON u.id = ANY (x.units)
        GROUP BY x.grp
    ), outside AS (
        SELECT pp.area FROM pp WHERE NOT pp.meets
        UNION ALL
        SELECT CASE WHEN ST_Covers(mg.geom, g.geom) THEN 0
                    ELSE coalesce(ST_Area(ST_Difference(g.geom, mg.geom)::geography), g.area) END
        FROM g JOIN merged mg ON mg.grp = g.grp
    ), pos AS (
        SELECT pp.pos_unit AS unit_id, count(*) AS n, sum(pp.area) AS area FROM pp GROUP BY 1
    ), inter AS (
        SELECT m.unit_id, count(*) AS n, sum(m.area) AS area FROM m WHERE m.area > 0 GROUP BY 1
        UNION ALL
        SELECT 0, count(*), sum(o.area) FROM outside o WHERE o.area > 0 HAVING count(*) > 0
    )
    SELECT coalesce(pos.unit_id, inter.unit_id)::bigint,
           coalesce(pos.n, 0)::bigint, coalesce(pos.area, 0)::double precision,
           coalesce(inter.n, 0)::bigint, coalesce(inter.area, 0)::double precision
    FROM pos FULL JOIN inter ON inter.unit_id = pos.unit_id
$$;

-- geoingest_area_as_of is geoingest_area_by_point_on_surface, or with
-- intersection geoingest_area_by_intersection, as of a time: one row per
-- key value of the units of that time, '(unassigned)' last.
CREATE FUNCTION geoingest_area_as_of(at timestamptz, admin_key text DEFAULT 'name', pipeline_version text DEFAULT NULL,
                                     intersection boolean DEFAULT false)
RETURNS TABLE (admin_unit text, parcels bigint, area_m2 double precision, area_ha double precision)
LANGUAGE sql STABLE
SET jit = off
AS $$
    WITH v AS MATERIALIZED (
        SELECT coalesce($3, geoingest_newest_pipeline_version()) AS version
    ), c AS MATERIALIZED (
        SELECT x.unit_id, CASE WHEN $4 THEN x.int_parcels ELSE x.pos_parcels END AS n,
               CASE WHEN $4 THEN x.int_area_m2 ELSE x.pos_area_m2 END AS area
        FROM v, LATERAL geoingest_report_cells_as_of($1, v.version) x
    ), r AS (
        SELECT false AS unassigned, coalesce(geoingest_property(a.properties, $2), '') AS name,
               coalesce(c.n, 0) AS n, coalesce(c.area, 0) AS area
        FROM v
        JOIN geoingest_features_as_of('admin_units', $1) a ON a.pipeline_version = v.version
        LEFT JOIN c ON c.unit_id = a.feature_id
        UNION ALL
        SELECT true, '(unassigned)', c.n, c.area FROM c WHERE c.unit_id = 0 AND c.n > 0
    )
    SELECT r.name, sum(r.n)::bigint, sum(r.area)::double precision, sum(r.area)::double precision / 10000
    FROM r
    GROUP BY r.unassigned, r.name
    ORDER BY r.unassigned, r.name
$$;
