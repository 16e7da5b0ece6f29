-- geoingest schema, version 12: what keeps a year of production in
-- proportion.
--
-- * Indexes for verify's incremental mode (`geoingest verify --since`):
--   jobs by commit time and claims by their last change, so that a check
--   of what changed reads only that.
-- * geoingest_report_compute (migration 0006) rewritten unit by unit. It
--   computed, for every parcel of the job, its point on surface, the unit
--   containing it and then whether that unit covers the parcel, with the
--   unit's geometry changing from one parcel to the next (no prepared
--   geometry), and it matched the parcels that cross a boundary against
--   the unions of their units with a nested loop over both lists. It now
--   takes each unit once (so PostGIS prepares its geometry once) and finds
--   the job's parcels it covers through the GiST index of the partition
--   that holds the job, within the job's extent (so a small job in the
--   shared partition reads its own neighbourhood, not each unit's); only the
--   parcels no unit covers (across a boundary, in a gap, under overlapping
--   units) are then matched, again unit by unit, and each distinct union
--   of units is looked up by its rank, not by a join. Same cells, same
--   contract (see 0006).
-- * Autovacuum per table: the ledger, the claims and their events, the
--   sources, the report assignments and the shared feature partitions are
--   updated or deleted from on every job, so they are vacuumed when 5 %
--   of their rows are dead (PostgreSQL's default: 20 %), which keeps their
--   dead tuples within a few percent of the live ones
--   (docs/operations.md, Retention).

CREATE INDEX IF NOT EXISTS jobs_committed_idx ON jobs (committed_at);
CREATE INDEX IF NOT EXISTS claims_updated_idx ON claims (updated_at);

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

DO $do$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs', 'claims', 'claim_events', 'sources', 'job_crs',
                             'report_assignments', 'report_assignment_cells',
                             'parcels_shared', 'admin_units_shared'] LOOP
        IF to_regclass(t) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05)', t);
        END IF;
    END LOOP;
END
$do$;
