-- Undoes 0054: the typed views' functions as of a time dropped, and
-- geoingest_apply_typed_view as in 0036.
DROP FUNCTION IF EXISTS geoingest_typed_parcels_as_of(timestamptz, text, text);
DROP FUNCTION IF EXISTS geoingest_typed_admin_units_as_of(timestamptz, text, text);

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
    RETURN v;
END
$function$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) SECURITY DEFINER SET search_path = %I, pg_temp SET lock_timeout = %L',
                   current_schema(), '10s');
END
$$;

DROP FUNCTION geoingest_apply_typed_as_of(text);
