-- geoingest schema, version 34: the typed schema (ingest/schema.go,
-- docs/schema.md). A job under a mapping stores each feature's attributes
-- as the mapping's record (the typed columns' values under their names,
-- the unmapped fields under "extras"); the typed views expose the columns
-- with their types. A value that does not cast puts its feature in the
-- quarantine (rule cast), counted in jobs.skipped_cast.

-- Adding a column with a constant default rewrites nothing (PostgreSQL 11).
ALTER TABLE jobs ADD COLUMN skipped_cast bigint NOT NULL DEFAULT 0;

-- geoingest_apply_typed_view creates or extends the view
-- geoingest_typed_<target>: the current features of the jobs written under
-- a mapping, with the view's own columns, then extras (the unmapped
-- fields), geom, then each typed column of columns (a JSON array of
-- {"name", "type"}) cast from the record. Columns are only ever added at
-- the end: CREATE OR REPLACE VIEW, online, no rewrite of any row. A column
-- dropped, renamed, moved or retyped is refused (that is not online: drop
-- the view first). The names and types are checked here as well as by the
-- caller, and quoted.
CREATE FUNCTION geoingest_apply_typed_view(target text, columns jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v text := 'geoingest_typed_' || target;
    sel text := '';
    c jsonb;
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'typed view: unknown target %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR c IN SELECT e FROM jsonb_array_elements(columns) e LOOP
        IF (c ->> 'name') !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
            RAISE EXCEPTION 'typed view: column name %', c ->> 'name' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (c ->> 'type') NOT IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz') THEN
            RAISE EXCEPTION 'typed view: column % type %', c ->> 'name', c ->> 'type' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel := sel || format(', (c.properties ->> %L)::%s AS %I', c ->> 'name', c ->> 'type', c ->> 'name');
    END LOOP;
    BEGIN
        EXECUTE format('CREATE OR REPLACE VIEW %I AS
                        SELECT c.id, c.feature_id, c.job_id, c.job_ref, c.feature_index, c.layer, c.pipeline_version, c.area_m2,
                               c.properties -> ''extras'' AS extras, c.geom%s
                        FROM %I c JOIN jobs j ON j.job_id = c.job_id
                        WHERE j.params ? ''mapping''', v, sel, 'geoingest_current_' || target);
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
                   'The current ' || target || ' written under a mapping of the typed schema, with its typed columns (geoingest schema apply).');
    RETURN v;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_apply_typed_view(text, jsonb) FROM PUBLIC;
    -- 0003's default privileges grant the analyst EXECUTE on every new
    -- function: a SECURITY DEFINER one that writes must be taken back.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_apply_typed_view(text, jsonb) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_apply_typed_view(text, jsonb) TO geoingest_writer;
    END IF;
END
$$;
