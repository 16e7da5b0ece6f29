-- Back to version 13: geoingest_report_compute as migration 0012 made it,
-- geoingest_report_cells as migration 0006 made it, and no prepared admin
-- generations.

CREATE OR REPLACE FUNCTION geoingest_report_compute(parcel_job_id text, unit_ids bigint[], overlapping_units bigint[])
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision,
               int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL SAFE SET jit = off AS $$
    WITH r AS MATERIALIZED (
        SELECT j.job_ref FROM jobs j
        WHERE j.job_id = $1 AND j.target_table = 'parcels'
          AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels')
    ), ext AS MATERIALIZED (
        -- The job's extent: the unit-by-unit scans below read the
        -- parcels in it only, not every parcel of a shared partition
        -- that lies in a unit's box.
        SELECT ST_SetSRID(ST_Extent(p.geom)::geometry, 4326) AS box
        FROM parcels p WHERE p.job_ref = (SELECT r.job_ref FROM r)
    ), u AS MATERIALIZED (
        SELECT a.id, a.geom FROM admin_units a
        WHERE a.id = ANY ($2) AND a.geom && (SELECT ext.box FROM ext)
        ORDER BY a.id
    ), covered AS MATERIALIZED (
        SELECT DISTINCT ON (c.id) c.id, c.unit_id
        FROM (SELECT p.id, a.id AS unit_id
              FROM u a
              JOIN parcels p ON p.job_ref = (SELECT r.job_ref FROM r) AND p.geom && a.geom
                            AND p.geom && (SELECT ext.box FROM ext)
              WHERE a.id <> ALL ($3) AND ST_Covers(a.geom, p.geom)
              OFFSET 0) c
        ORDER BY c.id, c.unit_id
    ), p AS MATERIALIZED (
        SELECT p.id, p.area_m2 AS area, c.unit_id AS cover_unit,
               c.unit_id IS NULL AND EXISTS (SELECT 1 FROM u a WHERE a.geom && p.geom) AS complex
        FROM parcels p
        LEFT JOIN covered c ON c.id = p.id
        WHERE p.job_ref = (SELECT r.job_ref FROM r)
    ), simple AS (
        SELECT coalesce(p.cover_unit, 0) AS unit_id, count(*) AS n, sum(p.area) AS area
        FROM p
        WHERE NOT p.complex
        GROUP BY 1
    ), cxp AS MATERIALIZED (
        SELECT f.id, f.geom, p.area, ST_PointOnSurface(f.geom) AS pt
        FROM p JOIN parcels f ON f.id = p.id AND f.job_ref = (SELECT r.job_ref FROM r)
        WHERE p.complex
    ), cu AS MATERIALIZED (
        -- unit by unit (so that PostGIS prepares each unit's geometry
        -- once), the complex parcels whose box meets the unit's.
        SELECT c.id, a.id AS unit_id, x.covers, ST_Intersects(a.geom, c.pt) AS pos,
               CASE WHEN x.covers THEN c.area
                    WHEN ST_Intersects(a.geom, c.geom) THEN ST_Area(ST_Intersection(a.geom, c.geom)::geography)
                    ELSE 0 END AS area
        FROM u a
        JOIN parcels f ON f.job_ref = (SELECT r.job_ref FROM r) AND f.geom && a.geom
                      AND f.geom && (SELECT ext.box FROM ext)
        JOIN cxp c ON c.id = f.id
        CROSS JOIN LATERAL (SELECT ST_Covers(a.geom, c.geom) AS covers OFFSET 0) x
    ), cx AS MATERIALIZED (
        SELECT cu.id, array_agg(cu.unit_id ORDER BY cu.unit_id) AS units,
               min(cu.unit_id) FILTER (WHERE cu.covers) AS cover_unit,
               coalesce(min(cu.unit_id) FILTER (WHERE cu.pos), 0) AS pos_unit
        FROM cu GROUP BY cu.id
    ), complex_pos AS (
        SELECT cx.pos_unit AS unit_id, count(*) AS n, sum(c.area) AS area
        FROM cx JOIN cxp c ON c.id = cx.id
        GROUP BY 1
    ), g AS MATERIALIZED (
        SELECT cx.id, cx.units, dense_rank() OVER (ORDER BY cx.units) AS grp
        FROM cx WHERE cx.cover_unit IS NULL
    ), merged AS MATERIALIZED (
        SELECT x.grp, ST_Union(u.geom) AS geom
        FROM (SELECT DISTINCT g.grp, g.units FROM g) x
        JOIN u ON u.id = ANY (x.units)
        GROUP BY x.grp
    ), complex_int AS (
        SELECT cu.unit_id, count(*) AS n, sum(cu.area) AS area
        FROM cu
        WHERE cu.area > 0
        GROUP BY cu.unit_id
        UNION ALL
        SELECT 0, count(*), sum(o.area)
        FROM (SELECT CASE WHEN ST_Covers(ma.geoms[gc.grp], gc.geom) THEN 0
                          ELSE coalesce(ST_Area(ST_Difference(gc.geom, ma.geoms[gc.grp])::geography), gc.area) END AS area
              FROM (SELECT array_agg(m.geom ORDER BY m.grp) AS geoms FROM merged m) ma,
                   (SELECT g.grp, c.geom, c.area FROM g JOIN cxp c ON c.id = g.id ORDER BY g.grp OFFSET 0) gc) o
        WHERE o.area > 0
        HAVING count(*) > 0
    ), pos AS (
        SELECT x.unit_id, sum(x.n) AS n, sum(x.area) AS area
        FROM (SELECT * FROM simple UNION ALL SELECT * FROM complex_pos) x
        GROUP BY x.unit_id
    ), inter AS (
        SELECT x.unit_id, sum(x.n) AS n, sum(x.area) AS area
        FROM (SELECT * FROM simple UNION ALL SELECT * FROM complex_int) x
        GROUP BY x.unit_id
    )
    SELECT coalesce(pos.unit_id, inter.unit_id)::bigint,
           coalesce(pos.n, 0)::bigint, coalesce(pos.area, 0)::double precision,
           coalesce(inter.n, 0)::bigint, coalesce(inter.area, 0)::double precision
    FROM pos FULL JOIN inter ON inter.unit_id = pos.unit_id
    WHERE cardinality($2) > 0
    UNION ALL
    SELECT 0, j.feature_count, j.total_area_m2, j.feature_count, j.total_area_m2
    FROM jobs j
    WHERE cardinality($2) = 0 AND j.job_id = $1 AND j.feature_count > 0
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels')
$$;

CREATE OR REPLACE FUNCTION geoingest_report_cells(pipeline_version text)
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision,
               int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL SAFE SET jit = off AS $$
    WITH g AS MATERIALIZED (
        SELECT geoingest_admin_generation($1) AS gen
    ), j AS MATERIALIZED (
        SELECT s.current_job_id AS job_id,
               EXISTS (SELECT 1 FROM report_assignments r, g
                       WHERE r.parcel_job_id = s.current_job_id AND r.admin_generation = g.gen) AS assigned
        FROM sources s
        WHERE s.target_table = 'parcels' AND s.pipeline_version = $1
          AND s.current_job_id IS NOT NULL
    ), stale AS MATERIALIZED (
        SELECT j.job_id, w.ids, geoingest_overlapping_units(w.ids) AS overlapping
        FROM (SELECT geoingest_admin_unit_ids($1) AS ids) w, j
        WHERE NOT j.assigned
    )
    SELECT c.unit_id, c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
    FROM j, g, report_assignment_cells c
    WHERE j.assigned AND c.parcel_job_id = j.job_id AND c.admin_generation = g.gen
    UNION ALL
    SELECT x.unit_id, x.pos_parcels, x.pos_area_m2, x.int_parcels, x.int_area_m2
    FROM stale, LATERAL geoingest_report_compute(stale.job_id, stale.ids, stale.overlapping) x
$$;

DROP FUNCTION IF EXISTS geoingest_report_prepare_admin(text, text, bigint[]);
DROP FUNCTION IF EXISTS geoingest_clip_unit(geometry, box2d);
DROP TABLE IF EXISTS report_admin_generations;
