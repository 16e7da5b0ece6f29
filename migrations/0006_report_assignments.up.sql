-- geoingest schema, version 6: report assignments, so that the area reports
-- count every current parcel exactly once, reconcile with the ledger, and
-- answer in milliseconds at a million parcels.
--
-- What a report needs from one parcel job J against the admin layer of its
-- pipeline version is a handful of numbers per admin unit: how many of J's
-- parcels have their point on surface in the unit and their area, and how
-- much of their area lies in the unit. Those numbers depend on J's features
-- and on the admin units' features and on nothing else. Both are immutable
-- once committed (a new version is a new job; `verify` checks the rows
-- against the checksum recorded at write time), so the numbers are
-- computed once per pair (parcel job, admin generation) and kept:
--
--   admin generation: the set of current admin-unit jobs of a pipeline
--   version, named by geoingest_admin_generation (a hash of their sorted
--   job ids). Any new, replaced or retired admin job makes a new one; a job
--   never becomes current again, so a generation never comes back.
--
-- report_assignments holds one row per computed pair, report_assignment_cells
-- its numbers per admin unit. `geoingest` refreshes them after every
-- committed job and before a CLI report (Store.RefreshReports); the
-- reports read them for pairs that are current and compute the rest on the
-- fly with the same function, so a report is always exact and never mixes
-- generations, and is fast once the refresh has run.

-- report_assignments: one row per (parcel job, admin generation) whose
-- cells are computed. It is inserted ON CONFLICT DO NOTHING first in the
-- refresh transaction, like the write gate's jobs row: a concurrent
-- refresh of the same pair blocks on the primary key and then does
-- nothing.
CREATE TABLE report_assignments (
    parcel_job_id    text NOT NULL,
    admin_generation text NOT NULL,
    pipeline_version text NOT NULL,
    -- admin_job_ids: the admin jobs of the generation (sorted), whose
    -- units the cells were computed against.
    admin_job_ids    text[] NOT NULL,
    -- parcels and area_m2: the totals of the cells (point on surface), for
    -- the ledger comparison in verify.
    parcels          bigint NOT NULL DEFAULT 0,
    area_m2          double precision NOT NULL DEFAULT 0,
    seconds          double precision NOT NULL DEFAULT 0,
    assigned_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (parcel_job_id, admin_generation)
);

-- report_assignment_cells: per pair and admin unit (unit_id is
-- admin_units.id; 0 stands for "no unit"):
--   pos_parcels, pos_area_m2: the parcels whose ST_PointOnSurface lies in
--     the unit (on a boundary shared by several units: the lowest id), and
--     their area on the spheroid; unit 0: the point lies in no unit;
--   int_parcels, int_area_m2: the parcels whose intersection with the unit
--     has an area, and that area on the spheroid; unit 0: the parcels with
--     area outside every unit, and that area.
CREATE TABLE report_assignment_cells (
    parcel_job_id    text NOT NULL,
    admin_generation text NOT NULL,
    unit_id          bigint NOT NULL,
    pos_parcels      bigint NOT NULL,
    pos_area_m2      double precision NOT NULL,
    int_parcels      bigint NOT NULL,
    int_area_m2      double precision NOT NULL,
    PRIMARY KEY (parcel_job_id, admin_generation, unit_id),
    FOREIGN KEY (parcel_job_id, admin_generation)
        REFERENCES report_assignments (parcel_job_id, admin_generation) ON DELETE CASCADE
);

-- geoingest_report_parcels: the current parcels with what the report
-- needs of each (id, job, geometry, area on the spheroid). When the parcels
-- carry their area, computed once at write time (a column area_m2 of
-- geoingest_current_parcels), it is that; otherwise ST_Area(geom::geography)
-- is computed here, which is most of the cost of assigning a parcel job.
DO $do$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'geoingest_current_parcels'
                 AND column_name = 'area_m2') THEN
        CREATE VIEW geoingest_report_parcels AS
        SELECT p.id, p.job_id, p.geom, p.area_m2::double precision AS area_m2 FROM geoingest_current_parcels p;
    ELSE
        CREATE VIEW geoingest_report_parcels AS
        SELECT p.id, p.job_id, p.geom, ST_Area(p.geom::geography) AS area_m2 FROM geoingest_current_parcels p;
    END IF;
END
$do$;

-- geoingest_admin_job_ids: the current admin-unit jobs of a pipeline
-- version, sorted ({} when there is none).
CREATE FUNCTION geoingest_admin_job_ids(pipeline_version text) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(s.current_job_id ORDER BY s.current_job_id), '{}')
    FROM sources s
    WHERE s.target_table = 'admin_units' AND s.pipeline_version = $1
      AND s.current_job_id IS NOT NULL
$$;

-- geoingest_generation_name: the name of the admin generation made of
-- admin_job_ids (sorted): the hex SHA-256 of the ids joined by commas.
CREATE FUNCTION geoingest_generation_name(admin_job_ids text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT encode(sha256(convert_to(array_to_string($1, ','), 'UTF8')), 'hex')
$$;

-- geoingest_admin_generation: the name of the current admin generation of
-- a pipeline version.
CREATE FUNCTION geoingest_admin_generation(pipeline_version text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT geoingest_generation_name(geoingest_admin_job_ids($1))
$$;

-- geoingest_admin_unit_ids: the ids of the current admin units of a
-- pipeline version, sorted ({} when there is none).
CREATE FUNCTION geoingest_admin_unit_ids(pipeline_version text) RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(a.id ORDER BY a.id), '{}')
    FROM geoingest_current_admin_units a
    WHERE a.pipeline_version = $1
$$;

-- geoingest_overlapping_units: of the admin units unit_ids, those whose
-- interior meets another one's interior (so that some area lies in both),
-- sorted ({} when there is none).
CREATE FUNCTION geoingest_overlapping_units(unit_ids bigint[]) RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT u.id ORDER BY u.id), '{}')
    FROM admin_units a
    JOIN admin_units b ON b.id = ANY ($1) AND b.id > a.id AND b.geom && a.geom
    CROSS JOIN LATERAL (VALUES (a.id), (b.id)) u (id)
    WHERE a.id = ANY ($1) AND ST_Relate(a.geom, b.geom, 'T********')
$$;

-- geoingest_report_compute computes the cells (see report_assignment_cells)
-- of the parcels of the current job parcel_job_id (none if it is not
-- current) against the admin units unit_ids. Only the units a parcel
-- meets come back, and unit 0 when some parcel is outside every unit.
--
-- Point on surface: a parcel goes to the lowest-id unit whose geometry
-- intersects (contains, or has on its boundary) its ST_PointOnSurface, so
-- a point on a boundary shared by several units is counted once, in the
-- unit with the lowest id; a point in no unit goes to unit 0.
-- Intersection: a unit that covers the parcel gets its whole area; any
-- other unit gets ST_Area(ST_Intersection(unit, parcel)::geography),
-- counted only when positive (parcels that only touch a unit's boundary do
-- not count); the area outside every unit is the area of
-- ST_Difference(parcel, union of the units it meets), or 0 when a unit, or
-- that union, covers it (each union is computed once per set of units).
--
-- overlapping_units must be geoingest_overlapping_units(unit_ids): the
-- caller computes it once per admin generation.
--
-- With no admin unit at all (unit_ids empty) everything is in unit 0 and
-- the numbers are the ledger's (count and area recorded at write time),
-- so parcels written before the admin layer cost nothing to assign.
--
-- Plan: the job's parcels by job id; per parcel, its area on the spheroid
-- (see geoingest_report_parcels), its ST_PointOnSurface, the lowest-id
-- unit containing that point (admin_units_geom_idx, then a
-- point-in-polygon test), and whether that unit covers the parcel (one
-- ST_Covers per parcel: consecutive parcels mostly meet the same unit, so
-- PostGIS prepares its geometry once for all of them). A parcel that this
-- unit covers, when the unit overlaps no other, or whose box meets no
-- unit's box, is settled with that alone (nearly every parcel): its
-- interior lies in that unit's interior, which no other unit's interior
-- meets, so its point and all its area are in that unit (or in none).
-- Only the others (across a unit boundary, in a gap, under overlapping
-- units) are matched with every unit whose box meets theirs and pay for
-- ST_Intersection and ST_Difference, and only they keep their geometry in
-- the plan's working set. JIT is off: compiling this plan costs more than
-- running it.
CREATE FUNCTION geoingest_report_compute(parcel_job_id text, unit_ids bigint[], overlapping_units bigint[])
RETURNS TABLE (unit_id bigint, pos_parcels bigint, pos_area_m2 double precision,
               int_parcels bigint, int_area_m2 double precision)
LANGUAGE sql STABLE PARALLEL SAFE SET jit = off AS $$
    WITH p AS MATERIALIZED (
        SELECT p.id, p.area_m2 AS area,
               CASE WHEN f.covers AND f.unit_id <> ALL ($3) THEN f.unit_id END AS cover_unit,
               CASE WHEN (f.covers AND f.unit_id <> ALL ($3))
                         OR (f.unit_id IS NULL AND NOT EXISTS (SELECT 1 FROM admin_units a
                                                               WHERE a.id = ANY ($2) AND a.geom && p.geom))
                    THEN NULL ELSE p.geom END AS geom
        FROM geoingest_report_parcels p
        CROSS JOIN LATERAL (SELECT ST_PointOnSurface(p.geom) AS pt OFFSET 0) q
        LEFT JOIN LATERAL (
            SELECT a.id AS unit_id, ST_Covers(a.geom, p.geom) AS covers
            FROM admin_units a
            WHERE a.id = ANY ($2) AND a.geom && q.pt AND ST_Intersects(a.geom, q.pt)
            ORDER BY a.id
            LIMIT 1
        ) f ON true
        WHERE p.job_id = $1
    ), simple AS (
        SELECT coalesce(p.cover_unit, 0) AS unit_id, count(*) AS n, sum(p.area) AS area
        FROM p
        WHERE p.geom IS NULL
        GROUP BY 1
    ), cx AS MATERIALIZED (
        SELECT p.id, p.geom, p.area, m.units, m.covers, m.cover_unit
        FROM p
        CROSS JOIN LATERAL (
            SELECT array_agg(c.id ORDER BY c.id) AS units, array_agg(c.covers ORDER BY c.id) AS covers,
                   min(c.id) FILTER (WHERE c.covers) AS cover_unit
            FROM (SELECT a.id, ST_Covers(a.geom, p.geom) AS covers
                  FROM admin_units a
                  WHERE a.id = ANY ($2) AND a.geom && p.geom
                  OFFSET 0) c
        ) m
        WHERE p.geom IS NOT NULL
    ), u AS MATERIALIZED (
        SELECT a.id, a.geom FROM admin_units a WHERE a.id = ANY ($2)
    ), piece AS (
        SELECT x.unit_id, x.area
        FROM cx p
        CROSS JOIN LATERAL (
            SELECT c.id AS unit_id,
                   CASE WHEN c.covers THEN p.area
                        WHEN ST_Intersects(u.geom, p.geom) THEN ST_Area(ST_Intersection(u.geom, p.geom)::geography)
                        ELSE 0 END AS area
            FROM unnest(p.units, p.covers) AS c (id, covers)
            JOIN u ON u.id = c.id
            OFFSET 0
        ) x
    ), complex_pos AS (
        SELECT coalesce((SELECT min(u.id) FROM u
                         WHERE u.id = ANY (p.units) AND ST_Intersects(u.geom, ST_PointOnSurface(p.geom))), 0) AS unit_id,
               count(*) AS n, sum(p.area) AS area
        FROM cx p
        GROUP BY 1
    ), merged AS MATERIALIZED (
        SELECT x.units, ST_Union(u.geom) AS geom
        FROM (SELECT DISTINCT p.units FROM cx p WHERE p.cover_unit IS NULL) x
        JOIN u ON u.id = ANY (x.units)
        GROUP BY x.units
    ), complex_int AS (
        SELECT piece.unit_id, count(*) AS n, sum(piece.area) AS area
        FROM piece
        WHERE piece.area > 0
        GROUP BY piece.unit_id
        UNION ALL
        SELECT 0, count(*), sum(o.area)
        FROM (SELECT CASE WHEN ST_Covers(m.geom, p.geom) THEN 0
                          ELSE coalesce(ST_Area(ST_Difference(p.geom, m.geom)::geography), p.area) END AS area
              FROM cx p JOIN merged m ON m.units = p.units
              WHERE p.cover_unit IS NULL) o
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
    -- No admin unit at all: everything is in no unit, as the ledger says.
    SELECT 0, j.feature_count, j.total_area_m2, j.feature_count, j.total_area_m2
    FROM jobs j
    WHERE cardinality($2) = 0 AND j.job_id = $1 AND j.feature_count > 0
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels')
$$;

-- geoingest_report_cells: the cells of every current parcel job of a
-- pipeline version against the version's current admin generation, one
-- row per job and unit (sum them per unit). A job whose assignment to the
-- current generation is in report_assignments is read from
-- report_assignment_cells; any other is computed here with
-- geoingest_report_compute, the function that filled the table. Parcel
-- jobs, admin generation and cells come from one snapshot: generations
-- never mix.
CREATE FUNCTION geoingest_report_cells(pipeline_version text)
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

-- The two reports keep their names, arguments and columns (migration
-- 0002); what changes:
--   * every current parcel is counted exactly once by point-on-surface: a
--     point on a shared boundary goes to the unit with the lowest id;
--   * parcels in no unit (point-on-surface), or the parcel area outside
--     every unit (intersection), make a last row named '(unassigned)',
--     present only when it is not empty; so the rows of point-on-surface
--     add up to every current parcel and its whole area;
--   * they read report_assignment_cells where it is current (see above).
-- Rows: admin units ordered by admin_unit, then '(unassigned)'.
CREATE OR REPLACE FUNCTION geoingest_area_by_point_on_surface(admin_key text DEFAULT 'name',
                                                              pipeline_version text DEFAULT NULL)
RETURNS TABLE (admin_unit text, parcels bigint, area_m2 double precision, area_ha double precision)
LANGUAGE sql STABLE PARALLEL SAFE SET jit = off AS $$
    WITH v AS MATERIALIZED (
        SELECT coalesce($2, geoingest_newest_pipeline_version()) AS version
    ), c AS MATERIALIZED (
        SELECT x.unit_id, sum(x.pos_parcels) AS n, sum(x.pos_area_m2) AS area
        FROM v, LATERAL geoingest_report_cells(v.version) x
        GROUP BY x.unit_id
    ), r AS (
        SELECT false AS unassigned, coalesce(geoingest_property(a.properties, $1), '') AS name,
               coalesce(c.n, 0) AS n, coalesce(c.area, 0) AS area
        FROM v
        JOIN geoingest_current_admin_units a ON a.pipeline_version = v.version
        LEFT JOIN c ON c.unit_id = a.id
        UNION ALL
        SELECT true, '(unassigned)', c.n, c.area FROM c WHERE c.unit_id = 0 AND c.n > 0
    )
    SELECT r.name, sum(r.n)::bigint, sum(r.area)::double precision, sum(r.area)::double precision / 10000
    FROM r
    GROUP BY r.unassigned, r.name
    ORDER BY r.unassigned, r.name
$$;

CREATE OR REPLACE FUNCTION geoingest_area_by_intersection(admin_key text DEFAULT 'name',
                                                          pipeline_version text DEFAULT NULL)
RETURNS TABLE (admin_unit text, parcels bigint, area_m2 double precision, area_ha double precision)
LANGUAGE sql STABLE PARALLEL SAFE SET jit = off AS $$
    WITH v AS MATERIALIZED (
        SELECT coalesce($2, geoingest_newest_pipeline_version()) AS version
    ), c AS MATERIALIZED (
        SELECT x.unit_id, sum(x.int_parcels) AS n, sum(x.int_area_m2) AS area
        FROM v, LATERAL geoingest_report_cells(v.version) x
        GROUP BY x.unit_id
    ), r AS (
        SELECT false AS unassigned, coalesce(geoingest_property(a.properties, $1), '') AS name,
               coalesce(c.n, 0) AS n, coalesce(c.area, 0) AS area
        FROM v
        JOIN geoingest_current_admin_units a ON a.pipeline_version = v.version
        LEFT JOIN c ON c.unit_id = a.id
        UNION ALL
        SELECT true, '(unassigned)', c.n, c.area FROM c WHERE c.unit_id = 0 AND c.n > 0
    )
    SELECT r.name, sum(r.n)::bigint, sum(r.area)::double precision, sum(r.area)::double precision / 10000
    FROM r
    GROUP BY r.unassigned, r.name
    ORDER BY r.unassigned, r.name
$$;

-- geoingest_admin_duplicate_keys: values of the property admin_key shared
-- by more than one current admin unit of a pipeline version (NULL: the
-- newest), with how many units and their ids. A unit without the property
-- counts as ''.
CREATE FUNCTION geoingest_admin_duplicate_keys(admin_key text DEFAULT 'name',
                                               pipeline_version text DEFAULT NULL)
RETURNS TABLE (admin_unit text, units bigint, unit_ids bigint[])
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(geoingest_property(a.properties, $1), ''), count(*), array_agg(a.id ORDER BY a.id)
    FROM geoingest_current_admin_units a
    WHERE a.pipeline_version = (SELECT coalesce($2, geoingest_newest_pipeline_version()))
    GROUP BY 1
    HAVING count(*) > 1
    ORDER BY 1
$$;

-- geoingest_admin_overlaps: pairs of current admin units of a pipeline
-- version (NULL: the newest) whose interiors intersect, so that area in
-- both would be counted twice by the intersection report, with the area of
-- the overlap on the spheroid. Units that only share a boundary do not
-- overlap.
CREATE FUNCTION geoingest_admin_overlaps(admin_key text DEFAULT 'name',
                                         pipeline_version text DEFAULT NULL)
RETURNS TABLE (unit_a bigint, admin_unit_a text, unit_b bigint, admin_unit_b text, area_m2 double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT a.id, coalesce(geoingest_property(a.properties, $1), ''),
           b.id, coalesce(geoingest_property(b.properties, $1), ''),
           ST_Area(ST_Intersection(a.geom, b.geom)::geography)
    FROM geoingest_current_admin_units a
    JOIN geoingest_current_admin_units b
      ON b.pipeline_version = a.pipeline_version AND b.id > a.id AND b.geom && a.geom
    WHERE a.pipeline_version = (SELECT coalesce($2, geoingest_newest_pipeline_version()))
      AND ST_Relate(a.geom, b.geom, 'T********')
    ORDER BY a.id, b.id
$$;
