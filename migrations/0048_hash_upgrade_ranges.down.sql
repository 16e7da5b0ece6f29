-- Undoes 0048: the walk by the n rows after a ctid again (0046).
CREATE OR REPLACE FUNCTION geoingest_upgrade_match_hashes(job_id text, after tid, n int, OUT rewritten bigint, OUT scanned_to tid, OUT busy boolean)
LANGUAGE plpgsql AS $$
DECLARE
    j  record;
    t  text;
BEGIN
    rewritten := 0;
    busy := false;
    SELECT jb.job_ref, jb.target_table INTO j
    FROM jobs jb JOIN sources s ON s.current_job_id = jb.job_id
    WHERE jb.job_id = geoingest_upgrade_match_hashes.job_id AND jb.status = 'current'
    FOR UPDATE OF s SKIP LOCKED;
    IF NOT FOUND THEN
        busy := EXISTS (SELECT FROM jobs jb JOIN sources s ON s.current_job_id = jb.job_id
                        WHERE jb.job_id = geoingest_upgrade_match_hashes.job_id AND jb.status = 'current');
        RETURN;
    END IF;
    t := geoingest_job_table(j.target_table, j.job_ref);
    EXECUTE format('WITH c AS (SELECT o.ctid AS rid FROM geoingest_store.%1$I o
                               WHERE o.job_ref = $1 AND o.ctid > $2 ORDER BY o.ctid LIMIT $3),
                         u AS (UPDATE geoingest_store.%1$I o
                               SET geom_hash = CASE WHEN o.geom_hash IS NULL OR o.geom_hash >= $4
                                                    THEN geoingest_geom_hash(o.geom) ELSE o.geom_hash END,
                                   props_hash = CASE WHEN o.props_hash IS NULL OR o.props_hash >= $4
                                                     THEN geoingest_props_hash(o.properties) ELSE o.props_hash END
                               FROM c
                               WHERE o.ctid = c.rid AND o.geom IS NOT NULL
                                 AND (o.geom_hash IS NULL OR o.geom_hash >= $4 OR o.props_hash IS NULL OR o.props_hash >= $4)
                               RETURNING 1)
                    SELECT (SELECT count(*) FROM u), CASE WHEN (SELECT count(*) FROM c) < $3 THEN NULL ELSE (SELECT max(c.rid) FROM c) END', t)
        INTO rewritten, scanned_to USING j.job_ref, coalesce(after, '(0,0)'::tid), n, geoingest_hash_form_end();
END
$$;


DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_upgrade_match_hashes(text, tid, int) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
END
$$;
