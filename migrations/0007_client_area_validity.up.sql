-- geoingest schema, version 7: the writer measures and checks the features.
--
-- Upgrades a version-6 database in place:
--
-- * parcels.area_m2 and admin_units.area_m2 stop being generated columns
--   and become plain ones: every row keeps its stored value (DROP
--   EXPRESSION rewrites nothing), and the writer now sends each row's area,
--   computed in Go exactly as ST_Area(geom::geography) computes it (the
--   same GeographicLib code of PROJ, the same ellipsoid parameters; see
--   geomio/geodesic), so the database no longer spends its CPU on it.
--   An UPDATE of geom still recomputes area_m2 (trigger
--   geoingest_area_follows_geom), so the column keeps agreeing with geom
--   when someone edits a row. A row INSERTed by hand without an area has
--   a NULL area_m2.
-- * geoingest_finish_job_table(target, job_ref, repair, invalid,
--   server_check): the writer checks validity in Go (GEOSisValid, the
--   check ST_IsValid makes, with the same libgeos_c) and passes the
--   indexes of the invalid features, so the server no longer runs
--   ST_IsValid on every row; only the rows with no area (server_check:
--   features transformed on the server from another CRS, coordinates
--   outside the longitude/latitude ranges) are measured and checked here.
--   The 3-argument form keeps working for any caller: it checks the rows
--   with no area, as an old writer leaves them all.

ALTER TABLE parcels ALTER COLUMN area_m2 DROP EXPRESSION;
ALTER TABLE admin_units ALTER COLUMN area_m2 DROP EXPRESSION;

-- geoingest_set_area sets a row's area_m2 from its geom.
CREATE FUNCTION geoingest_set_area() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.area_m2 := ST_Area(NEW.geom::geography);
    RETURN NEW;
END
$$;

-- On the partitioned tables: PostgreSQL clones the trigger to every
-- partition, and to a job's partition when it is attached (after its
-- COPY, which the trigger therefore does not slow down).
CREATE TRIGGER geoingest_area_follows_geom BEFORE UPDATE OF geom ON parcels
    FOR EACH ROW EXECUTE FUNCTION geoingest_set_area();
CREATE TRIGGER geoingest_area_follows_geom BEFORE UPDATE OF geom ON admin_units
    FOR EACH ROW EXECUTE FUNCTION geoingest_set_area();

-- geoingest_finish_job_table checks and summarises a job's rows after the
-- COPY. invalid holds the indexes of the features the writer found
-- invalid; with server_check, the rows with no area_m2 get theirs here and
-- are checked with ST_IsValid. Invalid geometries are repaired when repair
-- is true (ST_MakeValid keeping the polygonal part, as MultiPolygon, and
-- the area of the result; a geometry with no area left is removed and
-- counted as collapsed; repaired counts both), or raise a data_exception
-- naming the first invalid feature and ST_IsValidReason. Then one pass
-- sums the number written, their area and their checksum (sum of
-- geoingest_row_hash). A job with a table of its own then gets its GiST
-- index, built once, and is attached to the target as the partition for
-- its ref (a brief SHARE UPDATE EXCLUSIVE lock on the target, held to
-- commit).
CREATE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                           invalid bigint[], server_check boolean,
                                           OUT written bigint, OUT area_m2 double precision,
                                           OUT features_checksum text, OUT repaired bigint,
                                           OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %I SET area_m2 = ST_Area(geom::geography)
                                   WHERE job_ref = $1 AND area_m2 IS NULL
                                   RETURNING feature_index, geom)
                        SELECT array_agg(feature_index) FILTER (WHERE NOT ST_IsValid(geom)) FROM m', t)
            INTO found USING job_ref;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %I
                            WHERE job_ref = $1 AND feature_index = (SELECT min(i) FROM unnest($2::bigint[]) i)
                            ORDER BY id LIMIT 1', t)
                INTO first USING job_ref, bad;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('UPDATE %I SET (geom, area_m2) = (SELECT v.g, ST_Area(v.g::geography)
                                                         FROM (SELECT ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3))) v(g))
                        WHERE job_ref = $1 AND feature_index = ANY($2)', t) USING job_ref, bad;
        GET DIAGNOSTICS repaired = ROW_COUNT;
        EXECUTE format('DELETE FROM %I WHERE job_ref = $1 AND feature_index = ANY($2) AND ST_IsEmpty(geom)', t)
            USING job_ref, bad;
        GET DIAGNOSTICS collapsed = ROW_COUNT;
    END IF;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM %I WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum USING job_ref;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %I USING gist (geom)', t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                       target, t, job_ref, job_ref + 1);
    END IF;
END
$$;

-- The 3-argument form of version 5, for a writer that sends no areas: the
-- server measures and checks every row that has none.
CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                                      OUT written bigint, OUT area_m2 double precision,
                                                      OUT features_checksum text, OUT repaired bigint,
                                                      OUT collapsed bigint)
LANGUAGE sql AS $$
    SELECT f.written, f.area_m2, f.features_checksum, f.repaired, f.collapsed
    FROM geoingest_finish_job_table(target, job_ref, repair, '{}'::bigint[], true) f
$$;

-- As 0005 did for its functions: the new one runs as its owner, with a
-- pinned search_path, and only the writer may call it.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_finish_job_table(text, bigint, boolean)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
END
$$;
