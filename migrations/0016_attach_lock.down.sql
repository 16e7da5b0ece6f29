-- Back to version 15 (0014's functions): the write gate attaches inside
-- geoingest_finish_job_table and drops a replaced own partition; its
-- table is created LIKE the target.

-- The partitions emptied by a replace or a retire are empty: dropped now,
-- as the earlier versions' replace did.
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT table_name FROM geoingest_folded WHERE new_ref IS NULL LOOP
        EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', t);
    END LOOP;
END
$$;
DELETE FROM geoingest_folded WHERE new_ref IS NULL;
ALTER TABLE geoingest_folded ALTER COLUMN new_ref SET NOT NULL;

CREATE OR REPLACE FUNCTION geoingest_create_job_storage(target text, job_ref bigint, OUT schema_name text, OUT table_name text)
LANGUAGE plpgsql AS $$
BEGIN
    schema_name := 'geoingest_store';
    table_name := geoingest_job_table(target, job_ref);
    IF job_ref > 0 THEN
        EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                       table_name, target, job_ref);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                                      invalid bigint[], server_check boolean,
                                                      OUT written bigint, OUT area_m2 double precision,
                                                      OUT features_checksum text, OUT repaired bigint,
                                                      OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := format('geoingest_store.%I', geoingest_job_table(target, job_ref));
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %s SET area_m2 = ST_Area(geom::geography)
                                   WHERE job_ref = $1 AND area_m2 IS NULL
                                   RETURNING feature_index, geom)
                        SELECT array_agg(feature_index) FILTER (WHERE NOT ST_IsValid(geom)) FROM m', t)
            INTO found USING job_ref;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %s
                            WHERE job_ref = $1 AND feature_index = (SELECT min(i) FROM unnest($2::bigint[]) i)
                            ORDER BY id LIMIT 1', t)
                INTO first USING job_ref, bad;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('UPDATE %s SET (geom, area_m2) = (SELECT v.g, ST_Area(v.g::geography)
                                                         FROM (SELECT ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3))) v(g))
                        WHERE job_ref = $1 AND feature_index = ANY($2)', t) USING job_ref, bad;
        GET DIAGNOSTICS repaired = ROW_COUNT;
        EXECUTE format('DELETE FROM %s WHERE job_ref = $1 AND feature_index = ANY($2) AND ST_IsEmpty(geom)', t)
            USING job_ref, bad;
        GET DIAGNOSTICS collapsed = ROW_COUNT;
    END IF;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM %s WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum USING job_ref;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %s USING gist (geom)', t);
        EXECUTE format('ALTER TABLE geoingest_store.%I ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)',
                       target, t, job_ref, job_ref + 1);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                                      OUT written bigint, OUT area_m2 double precision,
                                                      OUT features_checksum text, OUT repaired bigint,
                                                      OUT collapsed bigint)
LANGUAGE sql AS $$
    SELECT f.written, f.area_m2, f.features_checksum, f.repaired, f.collapsed
    FROM geoingest_finish_job_table(target, job_ref, repair, '{}'::bigint[], true) f
$$;

DROP FUNCTION geoingest_attach_job_table(text, bigint);

CREATE OR REPLACE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', t);
    ELSE
        EXECUTE format('DELETE FROM geoingest_store.%I WHERE job_ref = $1', t) USING job_ref;
    END IF;
END
$$;

-- Rights, as 0007 and 0014 set them: CREATE OR REPLACE resets a function's
-- SECURITY DEFINER and SET clauses (not its privileges).
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_create_job_storage(text, bigint)',
                             'geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_finish_job_table(text, bigint, boolean)',
                             'geoingest_drop_job_features(text, bigint)'] LOOP
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
