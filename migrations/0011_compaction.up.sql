-- geoingest schema, version 11: compaction, so that reads stay as fast as
-- one table however many generations are current.
--
-- A large job is still written into a partition of its own (COPY FREEZE,
-- GiST built once: the write path is unchanged). A spatial query cannot
-- prune partitions by job_ref, so it visits every one of them; the
-- compactor (geoingest compact, or serve's background loop) folds the
-- oldest own partitions into the target's shared partition so that at
-- most a few exist at once. Folding a job, in one transaction under its
-- source's row lock (taken by the caller):
--
--   1. its rows are copied into <target>_shared under a new negative
--      job_ref, and counted, summed and hashed as they go: they must equal
--      the ledger's feature_count, total_area_m2 and features_checksum
--      (geoingest_row_hash does not cover job_ref), else nothing is
--      folded;
--   2. the ledger row takes the new ref;
--   3. the own partition's rows are DELETEd, not dropped: a reader whose
--      snapshot is older than the fold still sees them there (and not the
--      copies, which are newer than its snapshot), a newer one sees only
--      the copies. No DDL, so no ACCESS EXCLUSIVE lock on the target;
--   4. the emptied partition is recorded in geoingest_folded.
--
-- The emptied partition is dropped later (geoingest_drop_folded), once
-- every transaction that was running when the fold had committed has
-- ended: then no snapshot can see its old rows any more, and dropping it
-- changes nothing any reader sees. The drop takes ACCESS EXCLUSIVE on the
-- target for a moment, under the caller's lock_timeout.

-- geoingest_folded: the own partitions emptied by a fold, waiting to be
-- dropped. wait_for holds the virtual transaction ids that were running
-- after the fold committed (NULL until recorded): the partition may be
-- dropped once none of them is.
CREATE TABLE geoingest_folded (
    table_name text PRIMARY KEY,
    target     text NOT NULL CHECK (target IN ('parcels', 'admin_units')),
    job_id     text NOT NULL,
    old_ref    bigint NOT NULL,
    new_ref    bigint NOT NULL,
    rows       bigint NOT NULL,
    folded_at  timestamptz NOT NULL DEFAULT now(),
    wait_for   text[]
);

-- geoingest_fold_job folds the current job job_id, which has a partition
-- of its own, into its target's shared partition (steps 1-4 above). The
-- caller holds the job's source row lock. Returns the job's new ref and
-- the rows moved; a job that is not current or has no partition of its
-- own is left alone (moved = 0, ref its current one). Raises
-- data_exception when the rows do not match the ledger: verify reports
-- such a job, and the compactor leaves it where it is.
CREATE FUNCTION geoingest_fold_job(job_id text, OUT new_ref bigint, OUT moved bigint)
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
    EXECUTE format('WITH ins AS (INSERT INTO %I (id, job_ref, feature_index, layer, properties, geom, area_m2)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2 FROM %I
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
    EXECUTE format('DELETE FROM %I', own);
    INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
    VALUES (own, j.target_table, geoingest_fold_job.job_id, j.job_ref, new_ref, n);
    moved := n;
END
$$;

-- geoingest_note_folded records, for every folded partition that has no
-- wait list yet, the virtual transactions of the client sessions running
-- now in this database (but the caller's; autovacuum's workers read no
-- rows for anyone): call it in a transaction that begins after the folds
-- committed.
CREATE FUNCTION geoingest_note_folded() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE geoingest_folded SET wait_for = coalesce(
        (SELECT array_agg(l.virtualtransaction) FROM pg_locks l
         JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'virtualxid' AND l.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
           AND a.datid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())), '{}')
    WHERE wait_for IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_drop_folded drops one folded partition whose wait is over
-- (none of its wait_for transactions is running), if there is one, and
-- returns its name (NULL: none is ready). The DROP takes ACCESS EXCLUSIVE
-- on the target until the caller commits: call it in a transaction of its
-- own, with a lock_timeout.
CREATE FUNCTION geoingest_drop_folded() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    f record;
BEGIN
    SELECT g.table_name, g.target INTO f FROM geoingest_folded g
    WHERE g.wait_for IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'virtualxid' AND l.virtualtransaction = ANY (g.wait_for))
    ORDER BY g.folded_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF f.table_name NOT LIKE f.target || '\_job\_%' THEN
        RAISE EXCEPTION 'geoingest_folded names % for %', f.table_name, f.target;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I', f.table_name);
    DELETE FROM geoingest_folded WHERE table_name = f.table_name;
    RETURN f.table_name;
END
$$;

-- The compactor runs as the writer: these move rows and drop tables with
-- their owner's rights, with the search_path pinned like 0005's.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_note_folded()', 'geoingest_drop_folded()'] LOOP
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
