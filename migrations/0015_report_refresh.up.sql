-- geoingest schema, version 15: a report refresh in proportion to the
-- parcel job, not to the admin units' vertices.
--
-- Migration 0012's geoingest_report_compute spent most of a 25,000-parcel
-- job's refresh on work that grows with the admin units' detail, once per
-- parcel or per pair: ST_Covers with a unit whose bounding box holds the
-- parcel's was tested only after the GiST scan (every parcel of the job's
-- extent came back for every unit); the parcels across a boundary were
-- matched with the units parcel by parcel, so each ST_Covers,
-- ST_Intersects and ST_Intersection converted the whole unit (thousands
-- of vertices) again; the area outside every unit needed the union of the
-- units each group of parcels meets; and every refresh recomputed which
-- units overlap. Now:
--
-- * report_admin_generations stores, once per admin generation (by
--   geoingest_report_prepare_admin, which the refresh calls): the units
--   that overlap, each unit's longest edge, and the union of the units;
-- * the parcels a unit covers are found with the unit's box as a GiST
--   condition (p.geom @ unit), one prepared unit at a time;
-- * the boundary parcels are tested unit by unit (prepared), and
--   intersected not with the whole unit but with a clip of it
--   (ST_ClipByBox2D) to a box around a few of them, grown by the unit's
--   longest edge: every edge of the unit that meets those parcels is in
--   the clip whole, with its own vertices, so the intersections are the
--   same polygons, and a clip of a few dozen vertices serves every
--   boundary parcel of a square a quarter of the unit wide;
-- * a parcel that the union of the units covers has no area outside
--   every unit (the 0012 function tested that against the union of the
--   units it meets, computed per group); only the others need that union.
--
-- Same cells, same contract (migration 0006): the report functions still
-- compute any pair not assigned yet with geoingest_report_compute, which
-- works (slower) when its admin generation is not prepared.

-- report_admin_generations: one row per prepared admin generation (see
-- migration 0006): its pipeline version, its units (sorted ids), those
-- whose interior meets another one's (geoingest_overlapping_units), each
-- unit's longest edge in degrees (unit_maxseg, in unit_ids' order), and
-- the union of the units (coverage; NULL when GEOS could not compute it:
-- the refresh then unions the units a parcel meets, as before). Rows of
-- generations that are no longer current are deleted by the refresh.
CREATE TABLE IF NOT EXISTS report_admin_generations (
    admin_generation  text PRIMARY KEY,
    pipeline_version  text NOT NULL,
    unit_ids          bigint[] NOT NULL,
    overlapping_units bigint[] NOT NULL,
    unit_maxseg       double precision[] NOT NULL,
    coverage          geometry(Geometry, 4326),
    seconds           double precision NOT NULL DEFAULT 0,
    prepared_at       timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE report_admin_generations SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);

-- geoingest_report_prepare_admin prepares the admin generation named
-- admin_generation (of pipeline_version, made of the units unit_ids) if it
-- is not prepared yet, and returns its overlapping units. Concurrent
-- callers may both compute it; the first insert wins, the rows are equal.
CREATE OR REPLACE FUNCTION geoingest_report_prepare_admin(admin_generation text, pipeline_version text, unit_ids bigint[])
RETURNS bigint[]
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    t0 timestamptz := clock_timestamp();
    ov bigint[];
    maxseg double precision[];
    cov geometry;
BEGIN
    SELECT g.overlapping_units INTO ov FROM report_admin_generations g
    WHERE g.admin_generation = geoingest_report_prepare_admin.admin_generation;
    IF FOUND THEN
        RETURN ov;
    END IF;
    ov := geoingest_overlapping_units(unit_ids);
    SELECT coalesce(array_agg(m.maxseg ORDER BY m.ord), '{}') INTO maxseg
    FROM unnest(unit_ids) WITH ORDINALITY AS i (id, ord)
    CROSS JOIN LATERAL (SELECT (SELECT max(ST_Length(s.geom)) FROM admin_units a, ST_DumpSegments(a.geom) s
                                WHERE a.id = i.id) AS maxseg, i.ord) m;
    BEGIN
        SELECT ST_Union(a.geom) INTO cov FROM admin_units a WHERE a.id = ANY (unit_ids);
    EXCEPTION WHEN OTHERS THEN
        cov := NULL; -- GEOS failed on this layer: the compute unions per parcel group
    END;
    INSERT INTO report_admin_generations (admin_generation, pipeline_version, unit_ids, overlapping_units,
                                          unit_maxseg, coverage, seconds)
    VALUES (geoingest_report_prepare_admin.admin_generation, pipeline_version, unit_ids, ov, maxseg,
            ST_SetSRID(cov, 4326), extract(epoch FROM clock_timestamp() - t0))
    ON CONFLICT DO NOTHING;
    RETURN ov;
END
$$;

-- geoingest_clip_unit is ST_ClipByBox2D(unit, box) when GEOS clips it to
-- a valid geometry, else NULL (the caller then uses the whole unit):
-- ST_ClipByBox2D is fast but does not promise a valid result.
CREATE OR REPLACE FUNCTION geoingest_clip_unit(unit geometry, box box2d) RETURNS geometry
LANGUAGE plpgsql IMMUTABLE PARALLEL RESTRICTED AS $$
DECLARE
    c geometry;
BEGIN
    c := ST_ClipByBox2D(unit, box);
    IF c IS NULL OR ST_IsEmpty(c) OR NOT ST_IsValid(c) THEN
        RETURN NULL;
    END IF;
    RETURN c;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$$;

-- geoingest_report_compute: the cells of migration 0006 (same contract,
-- same numbers), computed as described above. Plan: the job's parcels
-- that a unit covers, unit by unit (prepared, through the GiST index of
-- the job's partition, within the job's extent): nearly all of them,
-- settled with their stored area. The others that meet a unit's box
-- (across a boundary, in a gap, under overlapping units) are tested
-- against each unit whose box meets theirs, unit by unit (prepared), and
-- intersected with the unit's clip for their square; those that the union
-- of the units does not cover get ST_Difference from the union of the
-- units they meet. JIT is off: compiling this plan costs more than
-- running it. Nested loops are off but where a LATERAL scan or a join
-- condition needs one: the statistics of a partition just written say
-- nothing yet, and a nested loop of the job's parcels with the parcels a
-- unit covers, chosen on such estimates, took minutes. No parallel plan:
-- geoingest_clip_unit catches GEOS's errors in a subtransaction, which a
-- parallel operation may not start (and one job's parcels are too few to
-- pay for the workers).
CREATE OR REPLACE FUNCTION geoingest_report_compute(parcel_job_id text, unit_ids bigint[], overlapping_units bigint[])
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision,
               int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED SET jit = off SET enable_nestloop = off SET max_parallel_workers_per_gather = 0 AS $$
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
    ), gen AS MATERIALIZED (
        -- What the admin generation's preparation stored, if it ran
        -- (geoingest_report_prepare_admin): each unit's longest edge and
        -- the union of the units.
        SELECT g.unit_ids, g.unit_maxseg, g.coverage FROM report_admin_generations g
        WHERE g.unit_ids = $2
        LIMIT 1
    ), u AS MATERIALIZED (
        -- maxseg: the unit's longest edge, so that a clip of the unit to a
        -- box around some parcels, grown by it, keeps whole every edge
        -- that meets them; cell: the side of the squares that group the
        -- boundary parcels for one clip.
        SELECT a.id, a.geom,
               coalesce((SELECT m.maxseg FROM gen, unnest(gen.unit_ids, gen.unit_maxseg) AS m (id, maxseg) WHERE m.id = a.id),
                        (SELECT max(ST_Length(s.geom)) FROM ST_DumpSegments(a.geom) s)) AS maxseg,
               greatest(ST_XMax(a.geom) - ST_XMin(a.geom), ST_YMax(a.geom) - ST_YMin(a.geom), 1e-9) / 4 AS cell
        FROM admin_units a
        WHERE a.id = ANY ($2) AND a.geom && (SELECT ext.box FROM ext)
        ORDER BY a.id
    ), covered AS MATERIALIZED (
        SELECT DISTINCT ON (c.id) c.id, c.unit_id
        FROM (SELECT p.id, a.id AS unit_id
              FROM u a
              CROSS JOIN LATERAL (
                  -- a parameterised scan of the job's GiST index by the
                  -- unit's box, whatever the statistics of a partition
                  -- just written say
                  SELECT p.id FROM parcels p
                  WHERE p.job_ref = (SELECT r.job_ref FROM r) AND p.geom @ a.geom
                    AND p.geom && (SELECT ext.box FROM ext) AND ST_Covers(a.geom, p.geom)
                  OFFSET 0) p
              WHERE a.id <> ALL ($3)
              OFFSET 0) c
        ORDER BY c.id, c.unit_id
    ), p AS MATERIALIZED (
        SELECT p.id, p.area_m2 AS area, c.unit_id AS cover_unit,
               c.unit_id IS NULL AND EXISTS (SELECT 1 FROM u a WHERE a.geom && p.geom) AS complex,
               CASE WHEN c.unit_id IS NULL THEN p.geom END AS geom
        FROM parcels p
        LEFT JOIN covered c ON c.id = p.id
        WHERE p.job_ref = (SELECT r.job_ref FROM r)
    ), simple AS (
        SELECT coalesce(p.cover_unit, 0) AS unit_id, count(*) AS n, sum(p.area) AS area
        FROM p
        WHERE NOT p.complex
        GROUP BY 1
    ), cxp AS MATERIALIZED (
        -- outside: the union of the units does not cover the parcel, so
        -- some of its area may be in no unit.
        SELECT p.id, p.geom, p.area, ST_PointOnSurface(p.geom) AS pt,
               NOT coalesce(ST_Covers((SELECT gen.coverage FROM gen), p.geom), false) AS outside
        FROM p
        WHERE p.complex
    ), cu0 AS MATERIALIZED (
        SELECT c.id, a.id AS unit_id, x.covers, x.meets, ST_Intersects(a.geom, c.pt) AS pos, c.outside,
               floor(ST_X(c.pt) / a.cell) AS kx, floor(ST_Y(c.pt) / a.cell) AS ky
        FROM u a
        CROSS JOIN LATERAL (SELECT c.id, c.geom, c.pt, c.outside FROM cxp c WHERE c.geom && a.geom OFFSET 0) c
        CROSS JOIN LATERAL (SELECT CASE WHEN a.id = ANY ($3) THEN ST_Covers(a.geom, c.geom) ELSE false END AS covers,
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
        SELECT cu0.id, cu0.unit_id, cu0.covers, cu0.pos, cu0.outside,
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
        SELECT cx.pos_unit AS unit_id, count(*) AS n, sum(c.area) AS area
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

-- geoingest_report_cells (migration 0006) with the overlapping units of
-- the generation as prepared, when it is; parallel restricted, as
-- geoingest_report_compute now is.
CREATE OR REPLACE FUNCTION geoingest_report_cells(pipeline_version text)
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision,
               int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED SET jit = off AS $$
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
        SELECT j.job_id, w.ids,
               coalesce((SELECT a.overlapping_units FROM report_admin_generations a, g
                         WHERE a.admin_generation = g.gen AND a.unit_ids = w.ids),
                        geoingest_overlapping_units(w.ids)) AS overlapping
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
