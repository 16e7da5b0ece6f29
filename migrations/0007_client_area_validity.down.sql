-- Back to version 6: area_m2 is again a stored generated column,
-- ST_Area(geom::geography), recomputed for every row (PostgreSQL 15
-- cannot give an existing column an expression, so a new column replaces
-- it, and the views are pointed at it), and geoingest_finish_job_table
-- checks every row with ST_IsValid again.
--
-- Version 7's writer measures small polygons its own way, to within 1e-9
-- of ST_Area plus 0.01 m² (geomio/geodesic); version 6 compares the
-- ledger's total_area_m2 with the sum of the recomputed column to 1e-9.
-- So the ledger of every job whose rows are held is summed again from
-- them, and the stored report assignments (a cache the reports rebuild)
-- are dropped, so that version 6's verify compares like with like.
DROP FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean);
DROP TRIGGER geoingest_area_follows_geom ON parcels;
DROP TRIGGER geoingest_area_follows_geom ON admin_units;
DROP FUNCTION geoingest_set_area();

ALTER TABLE parcels RENAME COLUMN area_m2 TO geoingest_area_m2_v7;
ALTER TABLE admin_units RENAME COLUMN area_m2 TO geoingest_area_m2_v7;
ALTER TABLE parcels ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (ST_Area(geom::geography)) STORED;
ALTER TABLE admin_units ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (ST_Area(geom::geography)) STORED;

CREATE OR REPLACE VIEW geoingest_features AS
SELECT 'parcels'::text AS target_table, p.job_ref, p.id, p.feature_index, p.layer, p.properties, p.geom, p.area_m2
FROM parcels p
UNION ALL
SELECT 'admin_units'::text, a.job_ref, a.id, a.feature_index, a.layer, a.properties, a.geom, a.area_m2
FROM admin_units a;

CREATE OR REPLACE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2
FROM parcels p
JOIN jobs j ON j.job_ref = p.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';

CREATE OR REPLACE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2
FROM admin_units a
JOIN jobs j ON j.job_ref = a.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';

ALTER TABLE parcels DROP COLUMN geoingest_area_m2_v7;
ALTER TABLE admin_units DROP COLUMN geoingest_area_m2_v7;

UPDATE jobs j SET total_area_m2 = h.area
FROM (SELECT target_table, job_ref, sum(area_m2) AS area FROM geoingest_features GROUP BY target_table, job_ref) h
WHERE h.job_ref = j.job_ref AND h.target_table = j.target_table;
DELETE FROM report_assignments;

-- Version 5's function, as it was (SECURITY DEFINER and its grants are
-- set again below: CREATE OR REPLACE resets them).
CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                           OUT written bigint, OUT area_m2 double precision,
                                           OUT features_checksum text, OUT repaired bigint,
                                           OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
    invalid bigint;
    bad record;
BEGIN
    repaired := 0;
    collapsed := 0;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text,
                           count(*) FILTER (WHERE NOT ST_IsValid(geom))
                    FROM %I WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum, invalid USING job_ref;
    IF invalid > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %I
                            WHERE job_ref = $1 AND NOT ST_IsValid(geom) ORDER BY feature_index LIMIT 1', t)
                INTO bad USING job_ref;
            RAISE EXCEPTION 'feature %: invalid geometry: %', bad.feature_index, bad.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('UPDATE %I SET geom = ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3))
                        WHERE job_ref = $1 AND NOT ST_IsValid(geom)', t) USING job_ref;
        GET DIAGNOSTICS repaired = ROW_COUNT;
        EXECUTE format('DELETE FROM %I WHERE job_ref = $1 AND ST_IsEmpty(geom)', t) USING job_ref;
        GET DIAGNOSTICS collapsed = ROW_COUNT;
        EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                        FROM %I WHERE job_ref = $1', t)
            INTO written, area_m2, features_checksum USING job_ref;
    END IF;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %I USING gist (geom)', t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                       target, t, job_ref, job_ref + 1);
    END IF;
END
$$;

DO $$
DECLARE
    f text := 'geoingest_finish_job_table(text, bigint, boolean)';
BEGIN
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
    END IF;
END
$$;
