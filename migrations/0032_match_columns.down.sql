-- Undoes 0032: the match columns and the functions of the diff write
-- that uses them; the row moves and geoingest_key_part as before.
DROP FUNCTION geoingest_diff_apply(text, text, text, bigint, double precision, bigint, bigint);
DROP FUNCTION geoingest_diff_plan(text, bigint, text[]);
DROP FUNCTION geoingest_version_sync(text[]);
DROP FUNCTION geoingest_spooled(text, bigint, integer);
DROP FUNCTION geoingest_version_add_staged();
DROP FUNCTION geoingest_create_version();
DROP FUNCTION geoingest_match_key_expr(text[], text, int);

CREATE OR REPLACE FUNCTION geoingest_key_part(properties jsonb, field text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(properties -> field)
               WHEN 'string' THEN nullif(upper(btrim(properties ->> field, E' \t\r\n')), '')
               WHEN 'number' THEN trim_scale((properties -> field)::numeric)::text
           END
$$;

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
    EXECUTE format('WITH ins AS (INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2, feature_id FROM geoingest_store.%I
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
    EXECUTE format('DELETE FROM geoingest_store.%I', own);
    INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
    VALUES (own, j.target_table, geoingest_fold_job.job_id, j.job_ref, new_ref, n);
    moved := n;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_pend_job_table(target text, job_id text, old_ref bigint, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    own text;
BEGIN
    IF old_ref > 0 THEN
        RETURN old_ref;
    END IF;
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending job %: new ref % is not positive', job_id, new_ref;
    END IF;
    own := geoingest_job_table(target, new_ref);
    EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                   own, geoingest_job_table(target, -1), new_ref);
    EXECUTE format('WITH moved AS (DELETE FROM geoingest_store.%I WHERE job_ref = $1
                                   RETURNING id, feature_index, layer, properties, geom, area_m2, feature_id)
                    INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id)
                    SELECT id, $2, feature_index, layer, properties, geom, area_m2, feature_id FROM moved',
                   geoingest_job_table(target, -1), own)
        USING old_ref, new_ref;
    EXECUTE format('CREATE INDEX ON geoingest_store.%I USING gist (geom)', own);
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_pend_job_table.job_id;
    RETURN new_ref;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_pend_incoming(target text, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending version: new ref % is not positive', new_ref;
    END IF;
    EXECUTE format('INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2)
                    SELECT id, $1, feature_index, layer, properties, geom, area_m2 FROM pg_temp.geoingest_incoming',
                   geoingest_job_table(target, new_ref))
        USING new_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Rights, as 0014 set them: CREATE OR REPLACE resets a function's
-- SECURITY DEFINER and SET clauses (geoingest_fold_job, and
-- geoingest_pend_job_table, which 0027 made SECURITY DEFINER: it moves a
-- held version's table in the store, which the writer may not). The functions
-- new here run with their caller's rights (SECURITY INVOKER), so that an
-- analyst who may run them cannot write anything with them.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
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


DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'geoingest_store' AND c.relkind = 'r' AND NOT c.relispartition
               AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'geom_hash')
    LOOP
        EXECUTE format('ALTER TABLE geoingest_store.%I DROP COLUMN match_key, DROP COLUMN geom_hash, DROP COLUMN props_hash', t.relname);
    END LOOP;
END
$$;
ALTER TABLE geoingest_store.parcels DROP COLUMN match_key, DROP COLUMN geom_hash, DROP COLUMN props_hash;
ALTER TABLE geoingest_store.admin_units DROP COLUMN match_key, DROP COLUMN geom_hash, DROP COLUMN props_hash;
