-- geoingest schema, version 54: the typed views as of a time
-- (docs/schema.md, "History in typed columns").
--
-- geoingest_features_as_of (0033, 0046) gives a feature's record as it
-- was; the typed views (0034, 0036) give the current features' typed
-- columns only. Each applied typed view now has a function beside it,
-- geoingest_typed_<target>_as_of(at [, bucket, key]), that gives the
-- features as they were at a time with the typed columns, cast from the
-- records that every version kept. geoingest_apply_typed_view (re)creates
-- it with the view; this migration creates it for the views already
-- applied.

-- geoingest_apply_typed_as_of (re)creates geoingest_typed_<target>_as_of,
-- the typed view as of a time: geoingest_features_as_of's features of the
-- sources whose version then was written under a mapping, with extras
-- and each registered typed column cast from the feature's record, as
-- geoingest_verify_typed casts it (0043); verify holds a stored column to
-- that same value. A column added since a feature was written reads NULL,
-- as in the view. The names come from the register, checked there and
-- quoted; the types from its list. Its parameters are positional (at,
-- then optionally the source's bucket and key), so that no typed
-- column's name can clash with one.
CREATE OR REPLACE FUNCTION geoingest_apply_typed_as_of(target text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    f    text := 'geoingest_typed_' || target || '_as_of';
    outs text;
    sel  text;
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'typed view as of: unknown target %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT FROM geoingest_typed_columns c WHERE c.target_table = target
               AND (c.name !~ '^[a-z_][a-z0-9_]{0,62}$' OR c.type NOT IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz'))) THEN
        RAISE EXCEPTION 'typed view as of %: the register holds a column name or type it does not allow', f
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(string_agg(format(', %I %s', c.name, c.type), '' ORDER BY c.position), ''),
           coalesce(string_agg(format(', (f.properties ->> %L)::%s', c.name, c.type), '' ORDER BY c.position), '')
    INTO outs, sel
    FROM geoingest_typed_columns c WHERE c.target_table = target;
    EXECUTE format('DROP FUNCTION IF EXISTS %I(timestamptz, text, text)', f);
    BEGIN
        EXECUTE format('CREATE FUNCTION %I(timestamptz, text DEFAULT NULL, text DEFAULT NULL)
                        RETURNS TABLE (source_bucket text, source_key text, pipeline_version text, job_id text, feature_id bigint,
                                       layer text, feature_index bigint, area_m2 double precision, extras jsonb, geom geometry%s)
                        LANGUAGE sql STABLE SET search_path TO %I, pg_temp
                        AS %L', f, outs, current_schema(),
                       format('SELECT f.source_bucket, f.source_key, f.pipeline_version, f.job_id, f.feature_id, f.layer,
                                      f.feature_index, f.area_m2, f.properties -> ''extras'', f.geom%s
                               FROM geoingest_features_as_of(%L, $1, $2, $3) f
                               JOIN jobs j ON j.job_id = f.job_id
                               WHERE j.params ? ''mapping''', sel, target));
    EXCEPTION WHEN invalid_function_definition THEN
        RAISE EXCEPTION 'typed view as of %: % (a typed column may not be named source_bucket, source_key, pipeline_version, job_id or extras)', f, SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I(timestamptz, text, text) TO geoingest_analyst', f);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I(timestamptz, text, text) TO geoingest_writer', f);
    END IF;
    EXECUTE format('COMMENT ON FUNCTION %I(timestamptz, text, text) IS %L', f,
                   'The ' || target || ' written under a mapping of the typed schema as they were at a time (and, optionally, of one source: bucket, key), with their typed columns cast from their records (geoingest schema apply).');
    RETURN f;
END
$function$;

-- geoingest_apply_typed_view: as in 0036, and it (re)creates the view's
-- function as of a time.
CREATE OR REPLACE FUNCTION geoingest_apply_typed_view(target text, columns jsonb)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    v    text := 'geoingest_typed_' || target;
    sel  text;
    c    jsonb;
    o    bigint;
    have record;
    n    int := 0;
    t    record;
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'typed view: unknown target %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_typeof(columns) <> 'array' THEN
        RAISE EXCEPTION 'typed view: columns must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR c IN SELECT e FROM jsonb_array_elements(columns) e LOOP
        IF (c ->> 'name') IS NULL OR (c ->> 'name') !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
            RAISE EXCEPTION 'typed view: column name %', c ->> 'name' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (c ->> 'type') IS NULL OR (c ->> 'type') NOT IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz') THEN
            RAISE EXCEPTION 'typed view: column % type %', c ->> 'name', c ->> 'type' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- One at a time: two applies never add the same column twice.
    LOCK TABLE geoingest_typed_columns IN SHARE ROW EXCLUSIVE MODE;
    -- The stored columns come first, in their order, with their types.
    FOR have IN SELECT * FROM geoingest_typed_columns WHERE target_table = target ORDER BY position LOOP
        n := n + 1;
        c := columns -> (have.position - 1);
        IF c IS NULL OR c ->> 'name' <> have.name OR c ->> 'type' <> have.type THEN
            RAISE EXCEPTION 'typed view %: column % % is stored at position %, the schema has %: a typed column can only be added, at the end (drop the view and the column to change or remove one)',
                v, have.name, have.type, have.position, coalesce((c ->> 'name') || ' ' || (c ->> 'type'), 'none')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- The new ones: a change of the catalog, no row rewritten.
    FOR c, o IN SELECT e, x.o FROM jsonb_array_elements(columns) WITH ORDINALITY x(e, o) WHERE x.o > n ORDER BY x.o LOOP
        IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = format('geoingest_store.%I', target)::regclass
                   AND a.attname = c ->> 'name' AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'typed view %: % is a column of the feature table already: choose another name', v, c ->> 'name'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN %I %s', target, c ->> 'name', c ->> 'type');
        -- The tables of pending versions, detached until approved.
        FOR t IN SELECT r.relname FROM pg_class r JOIN pg_namespace s ON s.oid = r.relnamespace
                 WHERE s.nspname = 'geoingest_store' AND r.relkind = 'r' AND NOT r.relispartition
                   AND r.relname LIKE target || '\_job\_%'
                   AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attname = c ->> 'name')
        LOOP
            EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN %I %s', t.relname, c ->> 'name', c ->> 'type');
        END LOOP;
        INSERT INTO geoingest_typed_columns (target_table, position, name, type) VALUES (target, o, c ->> 'name', c ->> 'type');
    END LOOP;
    sel := geoingest_typed_list(target, 'p');
    BEGIN
        EXECUTE format('CREATE OR REPLACE VIEW %I AS
                        SELECT p.id, coalesce(p.feature_id, p.id) AS feature_id, j.job_id, p.job_ref, p.feature_index, p.layer,
                               s.pipeline_version, p.area_m2, p.properties -> ''extras'' AS extras, p.geom%s
                        FROM geoingest_store.%I p
                        JOIN jobs j ON j.job_ref = p.job_ref
                        LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = %L
                        WHERE j.params ? ''mapping''', v, sel, target, target);
    EXCEPTION WHEN invalid_table_definition OR feature_not_supported OR datatype_mismatch THEN
        RAISE EXCEPTION 'typed view %: % (a typed column can only be added, at the end: drop the view to change or remove one)', v, SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I TO geoingest_analyst', v);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        EXECUTE format('GRANT SELECT ON %I TO geoingest_writer', v);
    END IF;
    EXECUTE format('COMMENT ON VIEW %I IS %L', v,
                   'The current ' || target || ' written under a mapping of the typed schema, with its stored typed columns (geoingest schema apply).');
    PERFORM geoingest_apply_typed_as_of(target);
    RETURN v;
END
$function$;

-- As 0034 and 0036: each runs with the owner's rights and its search
-- path pinned; the analyst may run neither (0003's default privileges
-- grant it EXECUTE on every new function), the writer (schema apply) may.
DO $$
DECLARE
    t text;
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) SECURITY DEFINER SET search_path = %I, pg_temp SET lock_timeout = %L',
                   current_schema(), '10s');
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_as_of(text) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_apply_typed_as_of(text) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_apply_typed_as_of(text) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_apply_typed_as_of(text) TO geoingest_writer;
    END IF;
    -- The views applied before this version get their function.
    FOR t IN SELECT DISTINCT c.target_table FROM geoingest_typed_columns c
             WHERE to_regclass('geoingest_typed_' || c.target_table) IS NOT NULL LOOP
        PERFORM geoingest_apply_typed_as_of(t);
    END LOOP;
END
$$;
