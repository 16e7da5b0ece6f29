-- Undoes 0055: geoingest_verify_typed as in 0043, with no parameter.
DROP FUNCTION geoingest_verify_typed(text[]);

CREATE FUNCTION geoingest_verify_typed() RETURNS TABLE (job_id text, target_table text, n bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    tg      text;
    differs text;
    filled  text;
BEGIN
    FOREACH tg IN ARRAY ARRAY['parcels', 'admin_units'] LOOP
        SELECT string_agg(format('p.%I IS DISTINCT FROM (p.properties ->> %L)::%s', c.name, c.name,
                                 CASE c.type WHEN 'text' THEN 'text' WHEN 'int8' THEN 'int8' WHEN 'numeric' THEN 'numeric'
                                             WHEN 'boolean' THEN 'boolean' WHEN 'date' THEN 'date' ELSE 'timestamptz' END),
                          ' OR ' ORDER BY c.position),
               string_agg(format('p.%I IS NOT NULL', c.name), ' OR ' ORDER BY c.position)
        INTO differs, filled
        FROM geoingest_typed_columns c WHERE c.target_table = tg;
        CONTINUE WHEN differs IS NULL;
        RETURN QUERY EXECUTE format('SELECT j.job_id, %L::text, count(*) FROM geoingest_store.%I p JOIN jobs j ON j.job_ref = p.job_ref
                                     WHERE CASE WHEN j.params ? ''mapping'' THEN %s ELSE %s END
                                     GROUP BY j.job_id ORDER BY j.job_id', tg, tg, differs, filled);
    END LOOP;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_verify_typed() SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
END
$$;

-- Only the writer (and the owner) may run it: the analyst, who may not read
-- the storage, may not run a function that reads it with the owner's
-- rights (0003's default privileges gave it EXECUTE). verify as the
-- analyst says this check was not run.
DO $$
BEGIN
    REVOKE EXECUTE ON FUNCTION geoingest_verify_typed() FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_verify_typed() FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_verify_typed() TO geoingest_writer;
    END IF;
END
$$;
