-- geoingest schema, version 55: verify's incremental mode checks the
-- stored typed columns of the jobs in its scope (docs/schema.md).
--
-- geoingest_verify_typed (0043) scanned every row of both targets, so
-- only the full verify ran it. It now takes the jobs to check (NULL, the
-- default: every job, as before). Given jobs, it reads only their rows:
-- their job_refs are read first and passed to the statement as a value,
-- so that its plan holds their partitions only (an array from a subquery
-- in the statement itself prunes none: every partition was scanned).
DROP FUNCTION geoingest_verify_typed();

-- geoingest_verify_typed lists, per job and target, the rows whose typed
-- columns disagree with their record (0043), of the jobs in job_ids, or
-- of every job when job_ids is NULL.
CREATE FUNCTION geoingest_verify_typed(job_ids text[] DEFAULT NULL) RETURNS TABLE (job_id text, target_table text, n bigint)
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

-- As 0043: the owner's rights, its search path pinned; the writer may run
-- it, the analyst may not (verify as the analyst says it was not run).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_verify_typed(text[]) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_verify_typed(text[]) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_verify_typed(text[]) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_verify_typed(text[]) TO geoingest_writer;
    END IF;
END
$$;
