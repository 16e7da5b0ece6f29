-- Undoes 0014: the feature tables and their partitions come back to this
-- schema, under their own names, in place of the views; the functions of
-- 0005, 0007 and 0011 get their bodies back. No row is copied.

DROP VIEW parcels;
DROP VIEW admin_units;

DO $$
DECLARE
    rel record;
BEGIN
    EXECUTE format('ALTER TABLE geoingest_store.parcels SET SCHEMA %I', current_schema());
    EXECUTE format('ALTER TABLE geoingest_store.admin_units SET SCHEMA %I', current_schema());
    FOR rel IN
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = 'geoingest_store'::regnamespace AND c.relkind = 'r'
          AND c.relname ~ '^(parcels|admin_units)_(shared|job_[0-9]+)$'
        ORDER BY c.relname
    LOOP
        EXECUTE format('ALTER TABLE geoingest_store.%I SET SCHEMA %I', rel.relname, current_schema());
    END LOOP;
END
$$;

-- The analyst reads the feature tables again, as 0003 and its default
-- privileges had it.
DO $$
DECLARE
    rel record;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        FOR rel IN
            SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
              AND c.relname ~ '^(parcels|admin_units)(_shared|_job_[0-9]+)?$'
        LOOP
            EXECUTE format('GRANT SELECT ON %I TO geoingest_analyst', rel.relname);
        END LOOP;
    END IF;
END
$$;

DROP FUNCTION geoingest_create_job_storage(text, bigint);

-- As 0005 made them.
CREATE OR REPLACE FUNCTION geoingest_create_job_table(target text, job_ref bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                       t, target, job_ref);
    END IF;
    RETURN t;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_insert_staged(target text, job_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('INSERT INTO %I (job_ref, feature_index, layer, properties, geom)
                    SELECT $1, s.feature_index, s.layer, s.properties, ST_Transform(ST_GeomFromEWKB(s.wkb), 4326)
                    FROM geoingest_staging s', geoingest_job_table(target, job_ref))
        USING job_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('DROP TABLE IF EXISTS %I', t);
    ELSE
        EXECUTE format('DELETE FROM %I WHERE job_ref = $1', t) USING job_ref;
    END IF;
END
$$;

-- As 0007 made it.
CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
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

-- As 0011 made them.
CREATE OR REPLACE FUNCTION geoingest_fold_job(job_id text, OUT new_ref bigint, OUT moved bigint)
LANGUAGE plpgsql AS $$
DECLARE
    j      record;
    own    text;
    shared text;
    n      bigint;
    area   double precision;
    sum    text;
BEGIN
    moved := 0;
    SELECT jobs.job_ref, jobs.target_table, jobs.status, jobs.feature_count, jobs.total_area_m2, jobs.features_checksum
    INTO j FROM jobs WHERE jobs.job_id = geoingest_fold_job.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    new_ref := j.job_ref;
    IF j.status <> 'current' OR j.job_ref <= 0 THEN
        RETURN;
    END IF;
    own := geoingest_job_table(j.target_table, j.job_ref);
    shared := geoingest_job_table(j.target_table, -1);
    new_ref := -nextval('geoingest_job_ref_seq');
    EXECUTE format('WITH ins AS (INSERT INTO %I (id, job_ref, feature_index, layer, properties, geom, area_m2)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2 FROM %I
                                 RETURNING feature_index, properties, geom, area_m2)
                    SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM ins', shared, own)
        INTO n, area, sum USING new_ref;
    IF n <> j.feature_count OR sum <> j.features_checksum
       OR abs(area - j.total_area_m2) > 1e-9 * greatest(abs(area), abs(j.total_area_m2)) THEN
        RAISE EXCEPTION 'job %: its % rows (area %, checksum %) do not match the ledger (% features, area %, checksum %): not folded; run geoingest verify',
            geoingest_fold_job.job_id, n, area, sum, j.feature_count, j.total_area_m2, j.features_checksum
            USING ERRCODE = 'data_exception';
    END IF;
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_fold_job.job_id;
    EXECUTE format('DELETE FROM %I', own);
    INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
    VALUES (own, j.target_table, geoingest_fold_job.job_id, j.job_ref, new_ref, n);
    moved := n;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_drop_folded() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    f record;
BEGIN
    SELECT g.table_name, g.target INTO f FROM geoingest_folded g
    WHERE g.wait_for IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'virtualxid' AND l.virtualtransaction = ANY (g.wait_for))
    ORDER BY g.folded_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF f.table_name NOT LIKE f.target || '\_job\_%' THEN
        RAISE EXCEPTION 'geoingest_folded names % for %', f.table_name, f.target;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I', f.table_name);
    DELETE FROM geoingest_folded WHERE table_name = f.table_name;
    RETURN f.table_name;
END
$$;

-- Their rights as 0005, 0007 and 0011 left them; the storage schema's
-- grants go, and so does the schema when it is the owner's (one an
-- administrator created for it stays, empty).
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_create_job_table(text, bigint)',
                             'geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_drop_job_features(text, bigint)',
                             'geoingest_fold_job(text)', 'geoingest_drop_folded()'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        ALTER DEFAULT PRIVILEGES IN SCHEMA geoingest_store REVOKE ALL ON TABLES FROM geoingest_writer;
        REVOKE ALL ON SCHEMA geoingest_store FROM geoingest_writer;
    END IF;
    IF pg_has_role((SELECT nspowner FROM pg_namespace WHERE nspname = 'geoingest_store'), 'USAGE') THEN
        DROP SCHEMA geoingest_store;
    END IF;
END
$$;
