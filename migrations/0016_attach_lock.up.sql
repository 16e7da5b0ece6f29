-- geoingest schema, version 16: a large job's own partition is attached
-- under the target's ACCESS EXCLUSIVE lock, as the write gate's last step;
-- no write gate drops a partition.
--
-- A reader of parcels (or admin_units, or a view of them) plans its
-- statement with the partition list its session has cached, refreshed
-- when it takes its lock on the table; in READ COMMITTED it takes its
-- snapshot after planning, and in REPEATABLE READ its snapshot may be
-- older than its first read of the table. ATTACH PARTITION takes only
-- SHARE UPDATE EXCLUSIVE on the target, which a reader's ACCESS SHARE does
-- not wait for, so:
--
-- * a reader that had planned before a large job committed and took its
--   snapshot after it saw the job's ledger row current and none of its
--   rows (its partition was not in the plan), and none of the generation
--   it replaced (deleted, in that snapshot);
-- * a repeatable-read reader whose snapshot is older than the commit, and
--   which read the target only after it, saw the new partition: its rows,
--   written by COPY FREEZE, were visible to every snapshot (PostgreSQL's
--   documented exception to MVCC), so beside the generation they replace
--   it saw them too; and a replaced generation's partition, dropped in
--   the same transaction, was gone for it, with nothing in its place.
--
-- So, from this version:
--
-- * geoingest_finish_job_table builds the own partition's index and no
--   longer attaches it; geoingest_attach_job_table attaches it, after
--   LOCK TABLE ONLY target IN ACCESS EXCLUSIVE MODE: the writer calls it
--   last, just before COMMIT (under a short lock_timeout, retried), so no
--   reader can take its lock between the attach and the end of the commit,
--   and a reader that takes it after processes the attach's invalidation
--   before planning. ACCESS EXCLUSIVE is the only mode ACCESS SHARE
--   conflicts with.
-- * The writer COPYs without FREEZE (Go): the rows are visible from the
--   commit on, to snapshots taken after it only.
-- * geoingest_drop_job_features deletes the rows of a generation with a
--   partition of its own instead of dropping the partition, and records
--   the emptied partition in geoingest_folded (new_ref NULL: removed, not
--   moved), which the compactor drops once no transaction that could see
--   its rows runs (geoingest_drop_folded, as after a fold).
-- * geoingest_create_job_storage creates the job's table LIKE the
--   target's shared partition, not LIKE the target: LIKE holds an ACCESS
--   SHARE lock on the table it copies until commit, and two writers each
--   holding it on the target while waiting for the other's lock on it
--   deadlocked.
--
-- The write gate's locks on the target (geoingest_store's partitioned
-- table) are then: none until its last
-- statement (writers into the shared partition hold ACCESS SHARE on the
-- target from their COPY, which needs the partition's bounds, and ROW
-- EXCLUSIVE on the shared partition), then ACCESS EXCLUSIVE for the
-- attach, after which it waits for nothing. So no gate waits while
-- holding a lock that another gate's attach waits for, and two gates
-- cannot deadlock on the target; and each attempt's lock_timeout is
-- shorter than deadlock_timeout's default (1s), so a cycle not foreseen
-- here would end in a timeout and a retry, not in a deadlock error.

-- geoingest_create_job_storage: as in 0014, LIKE the shared partition.
CREATE OR REPLACE FUNCTION geoingest_create_job_storage(target text, job_ref bigint, OUT schema_name text, OUT table_name text)
LANGUAGE plpgsql AS $$
BEGIN
    schema_name := 'geoingest_store';
    table_name := geoingest_job_table(target, job_ref);
    IF job_ref > 0 THEN
        EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                       table_name, geoingest_job_table(target, -1), job_ref);
    END IF;
END
$$;

-- geoingest_finish_job_table: as in 0014, but an own partition gets its
-- index only; geoingest_attach_job_table attaches it.
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
    END IF;
END
$$;

-- The 3-argument form of version 7 attached the partition too (through
-- the 5-argument form): for a writer of version 15 or before still running
-- while this migrates, it attaches after it, under the same lock.
CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                                      OUT written bigint, OUT area_m2 double precision,
                                                      OUT features_checksum text, OUT repaired bigint,
                                                      OUT collapsed bigint)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT f.written, f.area_m2, f.features_checksum, f.repaired, f.collapsed
    INTO written, area_m2, features_checksum, repaired, collapsed
    FROM geoingest_finish_job_table(target, job_ref, repair, '{}'::bigint[], true) f;
    PERFORM geoingest_attach_job_table(target, job_ref);
END
$$;

-- geoingest_attach_job_table attaches a job's own table (created by
-- geoingest_create_job_storage, indexed by geoingest_finish_job_table)
-- to the target as the partition for its ref, after taking ACCESS
-- EXCLUSIVE on the target (ONLY: its partitions are not locked), held to
-- commit. Call it as the write gate's last statement, with a
-- lock_timeout: while it waits for the transactions holding the target,
-- new readers of the target wait behind it. A non-positive ref has no
-- table of its own: nothing to do.
CREATE FUNCTION geoingest_attach_job_table(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    IF job_ref <= 0 THEN
        RETURN;
    END IF;
    t := geoingest_job_table(target, job_ref); -- checks target
    EXECUTE format('LOCK TABLE ONLY geoingest_store.%I IN ACCESS EXCLUSIVE MODE', target);
    EXECUTE format('ALTER TABLE geoingest_store.%I ATTACH PARTITION geoingest_store.%I FOR VALUES FROM (%s) TO (%s)',
                   target, t, job_ref, job_ref + 1);
END
$$;

-- geoingest_folded also holds the partitions of generations replaced or
-- retired while in a partition of their own: emptied, not moved (new_ref
-- NULL).
ALTER TABLE geoingest_folded ALTER COLUMN new_ref DROP NOT NULL;

-- geoingest_drop_job_features removes a job's features: its rows of the
-- shared partition, or every row of its own partition, which is then
-- recorded in geoingest_folded for the compactor to drop once no
-- transaction that could still see the rows runs. A DELETE, not a DROP:
-- a repeatable-read reader whose snapshot is older than the caller's
-- commit goes on seeing the generation, and the caller takes no lock on
-- the target.
CREATE OR REPLACE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
    n bigint;
BEGIN
    EXECUTE format('DELETE FROM geoingest_store.%I WHERE job_ref = $1', t) USING job_ref;
    IF job_ref > 0 THEN
        GET DIAGNOSTICS n = ROW_COUNT;
        INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
        VALUES (t, target, coalesce((SELECT j.job_id FROM jobs j WHERE j.job_ref = geoingest_drop_job_features.job_ref), ''),
                job_ref, NULL, n)
        ON CONFLICT (table_name) DO NOTHING;
    END IF;
END
$$;

-- Rights, as 0014 set them: CREATE OR REPLACE resets a function's
-- SECURITY DEFINER and SET clauses (not its privileges).
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_create_job_storage(text, bigint)',
                             'geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_finish_job_table(text, bigint, boolean)',
                             'geoingest_attach_job_table(text, bigint)',
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
