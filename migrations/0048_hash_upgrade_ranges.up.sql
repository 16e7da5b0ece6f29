-- geoingest_upgrade_match_hashes walks a generation with a partition of
-- its own by ranges of blocks, not by "the n rows after a ctid" (0046).
-- A partition of its own has no index on job_ref, and "ORDER BY ctid
-- LIMIT n" after a ctid is not an ordered scan: every batch read, and
-- sorted for its top n, every row after the cursor, so a walk cost the
-- square of the generation's size (14.6 s per 1,000,000 rows measured at
-- 20,000 rows, 32.3 s at 200,000). A batch now reads the blocks
-- [start, start + k) with a TID range scan, k the blocks that hold about
-- n rows by the table's own statistics (at least one), and returns the
-- first ctid past them, "(start + k, 0)", as its cursor; the next batch
-- reads the rows after it (offset 0 holds no row, so "> (b,0)" reads all
-- of block b). A cursor of 0046's form (the last row read) resumes after
-- that row, so a walk that spans the upgrade skips nothing. The walk ends
-- (NULL) when a batch's range reaches the table's last block as it is
-- then; rows a version adds behind it are new rows, whose hashes are of
-- 0044's form (or are left for the next round, as before).
-- The shared partition keeps 0046's query: its rows of one job are found
-- by its job_ref index, and a generation there is small (the compactor
-- merges only small generations into it).
CREATE OR REPLACE FUNCTION geoingest_upgrade_match_hashes(job_id text, after tid, n int, OUT rewritten bigint, OUT scanned_to tid, OUT busy boolean)
LANGUAGE plpgsql AS $$
DECLARE
    j       record;
    t       text;
    startb  bigint;
    k       bigint;
    nblocks bigint;
    per     double precision;
    upto    tid;
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
    IF j.job_ref <= 0 THEN
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
        RETURN;
    END IF;
    nblocks := pg_relation_size(format('geoingest_store.%I', t)::regclass) / current_setting('block_size')::bigint;
    SELECT CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages END INTO per
    FROM pg_class c WHERE c.oid = format('geoingest_store.%I', t)::regclass;
    k := greatest(1, ceil(n / coalesce(per, 16))::bigint);
    startb := coalesce((after::text::point)[0]::bigint, 0);
    upto := format('(%s,0)', startb + k)::tid;
    EXECUTE format('UPDATE geoingest_store.%1$I o
                    SET geom_hash = CASE WHEN o.geom_hash IS NULL OR o.geom_hash >= $3
                                         THEN geoingest_geom_hash(o.geom) ELSE o.geom_hash END,
                        props_hash = CASE WHEN o.props_hash IS NULL OR o.props_hash >= $3
                                          THEN geoingest_props_hash(o.properties) ELSE o.props_hash END
                    WHERE o.ctid > $1 AND o.ctid < $2 AND o.job_ref = $4 AND o.geom IS NOT NULL
                      AND (o.geom_hash IS NULL OR o.geom_hash >= $3 OR o.props_hash IS NULL OR o.props_hash >= $3)', t)
        USING coalesce(after, '(0,0)'::tid), upto, geoingest_hash_form_end(), j.job_ref;
    GET DIAGNOSTICS rewritten = ROW_COUNT;
    scanned_to := CASE WHEN startb + k >= nblocks THEN NULL ELSE upto END;
END
$$;

-- CREATE OR REPLACE resets the rights 0046 gave it.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_upgrade_match_hashes(text, tid, int) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
END
$$;
