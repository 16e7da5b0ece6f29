-- geoingest schema, version 41: the report cells of a version follow its
-- changes (docs/reports.md, "A new version: the cells of what changed").
--
-- A pair's cells (migration 0006) are sums over its parcels, each parcel
-- counted on its own: its point on surface in one unit, its pieces in the
-- units it meets, its area in no unit. So the cells of a version J that
-- replaced B by a change record are B's cells (to the same admin
-- generation), less the cells of the rows J retired (their copies in
-- feature_history, migration 0033), plus the cells of the rows J wrote,
-- for the features whose geometry changed, that were added or that were
-- removed only: an attribute change moves no parcel. k changes cost the
-- cells of 2k parcels at most, whatever the size of the source.

-- geoingest_report_compute_rows is geoingest_report_compute's definition
-- (0015) applied to given parcels, each with a sign (+1 or -1): the cells
-- of the parcels, each counted sign times. The parcels are few: units are
-- found from each parcel through admin_units' GiST index.
CREATE FUNCTION geoingest_report_compute_rows(geoms geometry[], areas double precision[], signs int[],
                                              unit_ids bigint[], overlapping_units bigint[])
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision, int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET jit = off
AS $$
    WITH d AS MATERIALIZED (
        SELECT x.id, x.geom, x.area, x.sign FROM unnest($1, $2, $3) WITH ORDINALITY AS x (geom, area, sign, id)
    ), gen AS MATERIALIZED (
        SELECT g.unit_ids, g.unit_maxseg, g.coverage FROM report_admin_generations g
        WHERE g.unit_ids = $4
        LIMIT 1
    ), ue AS MATERIALIZED (
        -- each unit's box as a polygon of 5 points, read once: a box test
        -- on the unit itself reads its stored outline (TOAST) every time
        SELECT a.id, ST_Envelope(a.geom) AS env FROM admin_units a WHERE a.id = ANY ($4)
    ), u AS MATERIALIZED (
        -- the units whose box meets a parcel's
        SELECT a.id, a.geom, e.env,
               coalesce((SELECT m.maxseg FROM gen, unnest(gen.unit_ids, gen.unit_maxseg) AS m (id, maxseg) WHERE m.id = a.id),
                        (SELECT max(ST_Length(s.geom)) FROM ST_DumpSegments(a.geom) s)) AS maxseg,
               greatest(ST_XMax(a.geom) - ST_XMin(a.geom), ST_YMax(a.geom) - ST_YMin(a.geom), 1e-9) / 4 AS cell
        FROM ue e JOIN admin_units a ON a.id = e.id
        WHERE EXISTS (SELECT 1 FROM d WHERE d.geom && e.env)
        ORDER BY a.id
    ), covered AS MATERIALIZED (
        -- unit by unit, so that PostGIS prepares each unit once for the
        -- parcels in its box (its cache of the last geometry's prepared
        -- form)
        SELECT DISTINCT ON (c.id) c.id, c.unit_id
        FROM (SELECT x.id, a.id AS unit_id
              FROM u a
              CROSS JOIN LATERAL (SELECT d.id FROM d WHERE d.geom @ a.env AND ST_Covers(a.geom, d.geom) OFFSET 0) x
              WHERE a.id <> ALL ($5)
              OFFSET 0) c
        ORDER BY c.id, c.unit_id
    ), p AS MATERIALIZED (
        SELECT d.id, d.area, d.sign, c.unit_id AS cover_unit,
               c.unit_id IS NULL AND EXISTS (SELECT 1 FROM u a WHERE a.env && d.geom) AS complex,
               CASE WHEN c.unit_id IS NULL THEN d.geom END AS geom
        FROM d LEFT JOIN covered c ON c.id = d.id
    ), simple AS (
        SELECT coalesce(p.cover_unit, 0) AS unit_id, sum(p.sign) AS n, sum(p.sign * p.area) AS area
        FROM p WHERE NOT p.complex
        GROUP BY 1
    ), cxp AS MATERIALIZED (
        SELECT p.id, p.geom, p.area, p.sign, ST_PointOnSurface(p.geom) AS pt,
               NOT coalesce(ST_Covers((SELECT gen.coverage FROM gen), p.geom), false) AS outside
        FROM p WHERE p.complex
    ), cu0 AS MATERIALIZED (
        SELECT c.id, a.id AS unit_id, x.covers, x.meets, ST_Intersects(a.geom, c.pt) AS pos, c.outside,
               floor(ST_X(c.pt) / a.cell) AS kx, floor(ST_Y(c.pt) / a.cell) AS ky
        FROM u a
        CROSS JOIN LATERAL (SELECT c.id, c.geom, c.pt, c.outside FROM cxp c WHERE c.geom && a.env OFFSET 0) c
        CROSS JOIN LATERAL (SELECT CASE WHEN a.id = ANY ($5) THEN ST_Covers(a.geom, c.geom) ELSE false END AS covers,
                                   ST_Intersects(a.geom, c.geom) AS meets OFFSET 0) x
    ), clip AS MATERIALIZED (
        SELECT q.unit_id, q.kx, q.ky, coalesce(k.g, a.geom) AS geom
        FROM (SELECT cu0.unit_id, cu0.kx, cu0.ky, ST_Extent(c.geom) AS box
              FROM cu0 JOIN cxp c ON c.id = cu0.id
              WHERE cu0.meets AND NOT cu0.covers
              GROUP BY 1, 2, 3) q
        JOIN u a ON a.id = q.unit_id
        CROSS JOIN LATERAL (SELECT geoingest_clip_unit(a.geom, ST_Expand(q.box, a.maxseg * (1 + 1e-9) + 1e-12)) AS g OFFSET 0) k
    ), cu AS MATERIALIZED (
        SELECT cu0.id, cu0.unit_id, cu0.covers, cu0.pos, cu0.outside, c.sign,
               CASE WHEN cu0.covers THEN c.area
                    WHEN cu0.meets THEN ST_Area(ST_Intersection(k.geom, c.geom)::geography)
                    ELSE 0 END AS area
        FROM cu0 JOIN cxp c ON c.id = cu0.id
        LEFT JOIN clip k ON k.unit_id = cu0.unit_id AND k.kx = cu0.kx AND k.ky = cu0.ky
    ), cx AS MATERIALIZED (
        SELECT cu.id, array_agg(cu.unit_id ORDER BY cu.unit_id) AS units,
               min(cu.unit_id) FILTER (WHERE cu.covers) AS cover_unit,
               coalesce(min(cu.unit_id) FILTER (WHERE cu.pos), 0) AS pos_unit,
               bool_or(cu.outside) AS outside
        FROM cu GROUP BY cu.id
    ), complex_pos AS (
        SELECT cx.pos_unit AS unit_id, sum(c.sign) AS n, sum(c.sign * c.area) AS area
        FROM cx JOIN cxp c ON c.id = cx.id
        GROUP BY 1
    ), g AS MATERIALIZED (
        SELECT cx.id, cx.units, dense_rank() OVER (ORDER BY cx.units) AS grp
        FROM cx WHERE cx.cover_unit IS NULL AND cx.outside
    ), merged AS MATERIALIZED (
        SELECT x.grp, ST_Union(u.geom) AS geom
        FROM (SELECT DISTINCT g.grp, g.units FROM g) x
        JOIN u ON u.id = ANY (x.units)
        GROUP BY x.grp
    ), complex_int AS (
        SELECT cu.unit_id, sum(cu.sign) AS n, sum(cu.sign * cu.area) AS area
        FROM cu
        WHERE cu.area > 0
        GROUP BY cu.unit_id
        UNION ALL
        SELECT 0, sum(o.sign), sum(o.sign * o.area)
        FROM (SELECT gc.sign,
                     CASE WHEN ST_Covers(ma.geoms[gc.grp], gc.geom) THEN 0
                          ELSE coalesce(ST_Area(ST_Difference(gc.geom, ma.geoms[gc.grp])::geography), gc.area) END AS area
              FROM (SELECT array_agg(m.geom ORDER BY m.grp) AS geoms FROM merged m) ma,
                   (SELECT g.grp, c.geom, c.area, c.sign FROM g JOIN cxp c ON c.id = g.id ORDER BY g.grp OFFSET 0) gc) o
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
    WHERE cardinality($4) > 0
    UNION ALL
    SELECT 0, sum(d.sign)::bigint, sum(d.sign * d.area)::double precision, sum(d.sign)::bigint, sum(d.sign * d.area)::double precision
    FROM d
    WHERE cardinality($4) = 0
    HAVING count(*) > 0
$$;

-- geoingest_report_delta_cells is the cells of the current parcel job
-- job_id to admin_generation, from its base's and its change record, or
-- no row when they cannot be had that way: the job has no base (a
-- source's first version), the base has no cells to that generation, or
-- a changed row is not where the record says (then the refresh computes
-- the pair whole). Units whose cells come to no parcel are left out, as
-- geoingest_report_compute leaves them out.
CREATE FUNCTION geoingest_report_delta_cells(job_id text, admin_generation text, unit_ids bigint[], overlapping_units bigint[])
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision, int_parcels bigint, int_area_m2 double precision)
LANGUAGE plpgsql STABLE
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    base  text;
    ref   bigint;
    want  bigint;
    geoms geometry[];
    areas double precision[];
    signs int[];
BEGIN
    SELECT c.base_job_id, j.job_ref INTO base, ref
    FROM job_changes c JOIN jobs j ON j.job_id = c.job_id
    WHERE c.job_id = $1 AND c.target_table = 'parcels'
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels');
    IF base IS NULL OR NOT EXISTS (SELECT 1 FROM report_assignments r
                                   WHERE r.parcel_job_id = base AND r.admin_generation = $2) THEN
        RETURN;
    END IF;
    SELECT count(*) + count(*) FILTER (WHERE fc.kind <> 'added' AND fc.kind <> 'removed') INTO want
    FROM feature_changes fc
    WHERE fc.job_id = $1 AND fc.kind IN ('added', 'removed', 'geometry', 'geometry+attributes');
    IF want > (SELECT j.feature_count FROM jobs j WHERE j.job_id = $1) THEN
        RETURN; -- more parcels to count than the version has: computed whole instead
    END IF;
    SELECT coalesce(array_agg(x.geom), '{}'), coalesce(array_agg(x.area), '{}'), coalesce(array_agg(x.sign), '{}')
    INTO geoms, areas, signs
    FROM (
        -- the rows the job wrote: found through the GiST index by their
        -- new box, among the job's rows
        SELECT p.geom, p.area_m2 AS area, 1 AS sign
        FROM feature_changes fc
        CROSS JOIN LATERAL (SELECT p.geom, p.area_m2 FROM parcels p
                            WHERE p.job_ref = ref AND p.geom && fc.new_bbox::geometry
                              AND coalesce(p.feature_id, p.id) = fc.feature_id
                            LIMIT 1) p
        WHERE fc.job_id = $1 AND fc.kind IN ('added', 'geometry', 'geometry+attributes')
        UNION ALL
        -- the rows it retired, as the history kept them
        SELECT h.geom::geometry, h.area_m2, -1
        FROM feature_history h
        JOIN feature_changes fc ON fc.job_id = h.retired_by AND fc.feature_id = h.feature_id
        WHERE h.retired_by = $1 AND h.target_table = 'parcels'
          AND fc.kind IN ('removed', 'geometry', 'geometry+attributes')
    ) x;
    IF cardinality(geoms) <> want THEN
        RETURN; -- a row is missing: computed whole instead
    END IF;
    RETURN QUERY
    SELECT x.unit_id, sum(x.pos_parcels)::bigint, sum(x.pos_area_m2)::double precision,
           sum(x.int_parcels)::bigint, sum(x.int_area_m2)::double precision
    FROM (SELECT c.unit_id, c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
          FROM report_assignment_cells c
          WHERE c.parcel_job_id = base AND c.admin_generation = $2
          UNION ALL
          SELECT r.unit_id, r.pos_parcels, r.pos_area_m2, r.int_parcels, r.int_area_m2
          FROM geoingest_report_compute_rows(geoms, areas, signs, $3, $4) r) x
    GROUP BY x.unit_id
    HAVING sum(x.pos_parcels) <> 0 OR sum(x.int_parcels) <> 0
    ORDER BY x.unit_id;
END
$$;
