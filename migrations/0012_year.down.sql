DROP INDEX IF EXISTS jobs_committed_idx;
DROP INDEX IF EXISTS claims_updated_idx;

DO $do$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs', 'claims', 'claim_events', 'sources', 'job_crs',
                             'report_assignments', 'report_assignment_cells',
                             'parcels_shared', 'admin_units_shared'] LOOP
        IF to_regclass(t) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor)', t);
        END IF;
    END LOOP;
END
$do$;

-- geoingest_report_compute as migration 0006 made it.
CREATE OR REPLACE FUNCTION geoingest_report_compute(parcel_job_id text, unit_ids bigint[], overlapping_units bigint[])
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
