-- Undoes 0056: geoingest_typed_casts as in 0036,
-- geoingest_apply_typed_as_of as in 0054 and geoingest_verify_typed as in
-- 0055, each building its cast itself.
CREATE OR REPLACE FUNCTION geoingest_typed_casts(target text, alias text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(format(', (%I.properties ->> %L)::%s', alias, c.name,
                                      CASE c.type WHEN 'text' THEN 'text' WHEN 'int8' THEN 'int8' WHEN 'numeric' THEN 'numeric'
                                                  WHEN 'boolean' THEN 'boolean' WHEN 'date' THEN 'date' ELSE 'timestamptz' END),
                               '' ORDER BY c.position), '')
    FROM geoingest_typed_columns c WHERE c.target_table = target
$$;

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

CREATE OR REPLACE FUNCTION geoingest_verify_typed(job_ids text[] DEFAULT NULL) RETURNS TABLE (job_id text, target_table text, n bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    tg      text;
    differs text;
    filled  text;
    refs    bigint[];
BEGIN
    IF job_ids IS NOT NULL THEN
        SELECT coalesce(array_agg(j.job_ref), '{}') INTO refs FROM jobs j WHERE j.job_id = ANY (job_ids);
    END IF;
    FOREACH tg IN ARRAY ARRAY['parcels', 'admin_units'] LOOP
        SELECT string_agg(format('p.%I IS DISTINCT FROM (p.properties ->> %L)::%s', c.name, c.name,
                                 CASE c.type WHEN 'text' THEN 'text' WHEN 'int8' THEN 'int8' WHEN 'numeric' THEN 'numeric'
                                             WHEN 'boolean' THEN 'boolean' WHEN 'date' THEN 'date' ELSE 'timestamptz' END),
                          ' OR ' ORDER BY c.position),
               string_agg(format('p.%I IS NOT NULL', c.name), ' OR ' ORDER BY c.position)
        INTO differs, filled
        FROM geoingest_typed_columns c WHERE c.target_table = tg;
        CONTINUE WHEN differs IS NULL;
        IF job_ids IS NULL THEN
            RETURN QUERY EXECUTE format('SELECT j.job_id, %L::text, count(*) FROM geoingest_store.%I p JOIN jobs j ON j.job_ref = p.job_ref
                                         WHERE CASE WHEN j.params ? ''mapping'' THEN %s ELSE %s END
                                         GROUP BY j.job_id ORDER BY j.job_id', tg, tg, differs, filled);
        ELSE
            RETURN QUERY EXECUTE format('SELECT j.job_id, %L::text, count(*) FROM geoingest_store.%I p JOIN jobs j ON j.job_ref = p.job_ref
                                         WHERE p.job_ref = ANY ($1)
                                           AND CASE WHEN j.params ? ''mapping'' THEN %s ELSE %s END
                                         GROUP BY j.job_id ORDER BY j.job_id', tg, tg, differs, filled) USING refs;
        END IF;
    END LOOP;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_as_of(text) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_verify_typed(text[]) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
END
$$;

DROP FUNCTION geoingest_typed_cast(text, text, text);
DROP FUNCTION geoingest_typed_type(text);
