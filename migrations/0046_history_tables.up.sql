-- geoingest schema, version 46: a generation retired whole keeps its
-- table as history instead of copying its rows (docs/design.md, "History:
-- why rows copied beside the current ones"; docs/changes.md, "History");
-- and the match hashes stored before 0044 are rewritten in the background
-- (geoingest_upgrade_match_hashes, at the end).
--
-- A source deleted, or a generation replaced whole (a full replace, a
-- version written into a table of its own), retired every row of its
-- generation into feature_history with one INSERT ... SELECT and then
-- deleted them (0037): 2.6-5.3x the bare DELETE. A generation that has a
-- partition of its own is now, when it can be, detached from its target
-- and renamed <target>_retired_<ref> (geoingest_retire_whole), in the
-- write gate's transaction: catalog changes, no row read or written. The
-- table is recorded in geoingest_retired_tables with the job that retired
-- it, so that it is history exactly as the copies were:
--
-- * geoingest_history_rows(job, target) is the rows a job retired, from
--   feature_history and from the tables it retired whole; the as-of
--   function and the report cells of a version read it instead of
--   feature_history;
-- * prune removes a job's history with its ledger row (0039's statement
--   trigger on jobs): its copies, and now the tables it retired whole;
-- * the table keeps its indexes: 449 bytes a row, against 441 + 8 for a
--   copy (BenchmarkHistoryCapture).
--
-- When it cannot be: DETACH takes ACCESS EXCLUSIVE on the target, held to
-- COMMIT (the gate takes it last, as for an attach: attach.go), and, unlike
-- a DELETE, a detach is not versioned: a transaction whose snapshot is
-- older than the commit and which reads the target only after it would
-- miss the generation its snapshot still holds current (0016). So the
-- detach happens only when, with the target locked, no other backend holds
-- a snapshot (pg_stat_activity.backend_xmin; autovacuum aside; a
-- walsender counts, since a standby with hot_standby_feedback reports its
-- readers' snapshots through it); otherwise the function returns false,
-- the caller rolls back its savepoint (releasing the lock) and the rows
-- are copied as before (geoingest_drop_job_features).

CREATE TABLE geoingest_retired_tables (
    table_name  text PRIMARY KEY,
    target      text NOT NULL,
    job_ref     bigint NOT NULL,
    job_id      text NOT NULL,
    retired_by  text NOT NULL,
    rows        bigint,
    retired_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX geoingest_retired_tables_by_idx ON geoingest_retired_tables (retired_by);

-- geoingest_retire_whole detaches the own partition of the generation of
-- job_ref from target and keeps it as the history of the job the write
-- gate named (geoingest.history_job), returning NULL; or returns why not,
-- having changed nothing: no job named, the generation in the shared
-- partition or not attached, or another backend holding a snapshot (see
-- above; the target is then locked: the caller rolls back to a
-- savepoint). The caller sets lock_timeout.
CREATE FUNCTION geoingest_retire_whole(target text, job_ref bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    t    text := geoingest_job_table(target, job_ref);
    r    text := target || '_retired_' || job_ref;
    job  text := current_setting('geoingest.history_job', true);
    old  record;
    busy text;
BEGIN
    IF job IS NULL OR job = '' THEN
        RETURN 'no job named as retiring it';
    END IF;
    IF job_ref <= 0 OR job_ref = nullif(current_setting('geoingest.history_ref', true), '')::bigint
       OR NOT EXISTS (SELECT FROM pg_inherits i
                      WHERE i.inhrelid = to_regclass(format('geoingest_store.%I', t))
                        AND i.inhparent = format('geoingest_store.%I', target)::regclass) THEN
        RETURN 'no partition of its own';
    END IF;
    SELECT j.job_id, j.feature_count INTO old FROM jobs j WHERE j.job_ref = geoingest_retire_whole.job_ref;
    IF NOT FOUND THEN
        RETURN 'no ledger row';
    END IF;
    EXECUTE format('LOCK TABLE ONLY geoingest_store.%I IN ACCESS EXCLUSIVE MODE', target);
    PERFORM pg_stat_clear_snapshot();
    SELECT string_agg(format('pid %s (%s, %s: %s)', a.pid, a.backend_type, coalesce(a.state, ''), left(coalesce(a.query, ''), 60)), '; ')
    INTO busy
    FROM pg_stat_activity a
    WHERE a.pid <> pg_backend_pid() AND a.backend_xmin IS NOT NULL
      AND a.backend_type IS DISTINCT FROM 'autovacuum worker'
      AND (a.datname = current_database() OR a.backend_type = 'walsender');
    IF busy IS NOT NULL THEN
        RETURN 'another session holds a snapshot: ' || busy;
    END IF;
    EXECUTE format('ALTER TABLE geoingest_store.%I DETACH PARTITION geoingest_store.%I', target, t);
    EXECUTE format('ALTER TABLE geoingest_store.%I RENAME TO %I', t, r);
    INSERT INTO geoingest_retired_tables (table_name, target, job_ref, job_id, retired_by, rows)
    VALUES (r, target, job_ref, old.job_id, job, old.feature_count);
    RETURN NULL;
END
$$;

-- geoingest_history_rows is the rows of target that job retired: its
-- copies in feature_history and the tables it retired whole.
CREATE FUNCTION geoingest_history_rows(job text, target text)
RETURNS TABLE (feature_id bigint, layer text, feature_index bigint, properties jsonb, geom geometry, area_m2 double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    t text;
BEGIN
    RETURN QUERY SELECT h.feature_id, h.layer, h.feature_index, h.properties, h.geom::geometry, h.area_m2
                 FROM feature_history h WHERE h.retired_by = geoingest_history_rows.job AND h.target_table = geoingest_history_rows.target;
    FOR t IN SELECT r.table_name FROM geoingest_retired_tables r
             WHERE r.retired_by = geoingest_history_rows.job AND r.target = geoingest_history_rows.target LOOP
        RETURN QUERY EXECUTE format('SELECT coalesce(o.feature_id, o.id)::bigint, o.layer, o.feature_index::bigint, o.properties,
                                            o.geom::geometry, o.area_m2::double precision
                                     FROM geoingest_store.%I o', t);
    END LOOP;
END
$$;

-- geoingest_history is every history row, as geoingest_history_rows
-- gives them, with the job that retired it.
CREATE FUNCTION geoingest_history()
RETURNS TABLE (retired_by text, target_table text, feature_id bigint, layer text, feature_index bigint, properties jsonb,
               geom geometry, area_m2 double precision)
LANGUAGE sql STABLE AS $$
    SELECT x.retired_by, x.target, h.*
    FROM (SELECT DISTINCT f.retired_by, f.target_table AS target FROM feature_history f
          UNION SELECT r.retired_by, r.target FROM geoingest_retired_tables r) x
    CROSS JOIN LATERAL geoingest_history_rows(x.retired_by, x.target) h
$$;

-- Prune: a job's history goes with its ledger row, the tables it retired
-- whole too.
CREATE OR REPLACE FUNCTION geoingest_jobs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    DELETE FROM feature_changes c USING gone g WHERE c.job_id = g.job_id;
    DELETE FROM feature_history h USING gone g WHERE h.retired_by = g.job_id;
    FOR t IN DELETE FROM geoingest_retired_tables r USING gone g WHERE r.retired_by = g.job_id RETURNING r.table_name LOOP
        EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', t);
    END LOOP;
    RETURN NULL;
END
$$;

-- The as-of rows (0033), the history read through geoingest_history_rows.
CREATE OR REPLACE FUNCTION geoingest_features_as_of(target text, at timestamp with time zone, bucket text DEFAULT NULL::text, key text DEFAULT NULL::text)
 RETURNS TABLE(source_bucket text, source_key text, pipeline_version text, job_id text, feature_id bigint, layer text, feature_index bigint, properties jsonb, geom geometry, area_m2 double precision)
 LANGUAGE plpgsql
 STABLE
AS $$
DECLARE
    s   record;
    j   record;
    cut bigint;
    gap bigint;
BEGIN
    FOR s IN SELECT DISTINCT c.source_bucket, c.source_key, c.pipeline_version FROM job_changes c
             WHERE c.target_table = target AND (bucket IS NULL OR c.source_bucket = bucket) AND (key IS NULL OR c.source_key = key)
    LOOP
        SELECT c.job_id, c.seq, jb.status INTO j FROM job_changes c JOIN jobs jb ON jb.job_id = c.job_id
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.applied_at <= at
        ORDER BY c.seq DESC LIMIT 1;
        IF NOT FOUND THEN
            -- Before the source's first record: nothing then, unless prune
            -- removed the records of that time.
            IF EXISTS (SELECT FROM job_changes c WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key
                       AND c.target_table = target AND c.pipeline_version = s.pipeline_version AND c.seq = 1) THEN
                CONTINUE;
            END IF;
            RAISE EXCEPTION 'source %/% (%): % is before its retained history (prune removed the older versions)',
                s.source_bucket, s.source_key, s.pipeline_version, at USING ERRCODE = 'data_exception';
        END IF;
        IF j.status = 'deleted' THEN
            CONTINUE;
        END IF;
        -- The records after J must all be there (prune removes the oldest
        -- first): a gap would make the answer wrong.
        SELECT count(*) - (max(c.seq) - j.seq) INTO gap FROM job_changes c
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq;
        IF gap <> 0 THEN
            RAISE EXCEPTION 'source %/% (%): its change records after % are not all retained', s.source_bucket, s.source_key, s.pipeline_version, at
                USING ERRCODE = 'data_exception';
        END IF;
        SELECT min(c.seq) INTO cut FROM job_changes c
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq AND c.base_job_id IS NULL;
        RETURN QUERY
        WITH later AS (SELECT c.job_id, c.seq FROM job_changes c
                       WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
                         AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq AND (cut IS NULL OR c.seq < cut)),
             hist AS MATERIALIZED (SELECT l.seq AS hseq, row_number() OVER () AS hid, h.feature_id AS hfid, h.layer AS hlayer,
                                          h.feature_index AS hindex, h.properties AS hprops, h.geom AS hgeom, h.area_m2 AS harea
                                   FROM later l CROSS JOIN LATERAL geoingest_history_rows(l.job_id, target) h),
             touch AS (SELECT h.hfid AS fid, h.hseq AS seq, h.hid FROM hist h
                       UNION ALL
                       SELECT fc.feature_id, l.seq, NULL::bigint FROM later l JOIN feature_changes fc ON fc.job_id = l.job_id
                       WHERE fc.kind = 'added'),
             first AS (SELECT DISTINCT ON (t.fid) t.fid, t.hid FROM touch t ORDER BY t.fid, t.seq, t.hid NULLS LAST)
        SELECT s.source_bucket, s.source_key, s.pipeline_version, j.job_id, h.hfid, h.hlayer, h.hindex,
               h.hprops, h.hgeom, h.harea
        FROM first f JOIN hist h ON h.hid = f.hid
        UNION ALL
        SELECT s.source_bucket, s.source_key, s.pipeline_version, j.job_id, cur.feature_id, cur.layer, cur.feature_index,
               cur.properties, cur.geom, cur.area_m2
        FROM geoingest_features_current(target, s.source_bucket, s.source_key, s.pipeline_version) cur
        WHERE cut IS NULL AND NOT EXISTS (SELECT FROM touch t WHERE t.fid = cur.feature_id);
    END LOOP;
END
$$;

-- The report cells of a version (0041), its retired rows read through
-- geoingest_history_rows.
CREATE OR REPLACE FUNCTION geoingest_report_delta_cells(job_id text, admin_generation text, unit_ids bigint[], overlapping_units bigint[])
 RETURNS TABLE(unit_id bigint, pos_parcels bigint, pos_area_m2 double precision, int_parcels bigint, int_area_m2 double precision)
 LANGUAGE plpgsql
 STABLE
 SET jit TO 'off'
AS $$
#variable_conflict use_column
DECLARE
    base  text;
    ref   bigint;
    want  bigint;
    geoms geometry[];
    areas double precision[];
    signs int[];
BEGIN
    SELECT c.base_job_id, j.job_ref INTO base, ref
    FROM job_changes c JOIN jobs j ON j.job_id = c.job_id
    WHERE c.job_id = $1 AND c.target_table = 'parcels'
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels');
    IF base IS NULL OR NOT EXISTS (SELECT 1 FROM report_assignments r
                                   WHERE r.parcel_job_id = base AND r.admin_generation = $2) THEN
        RETURN;
    END IF;
    SELECT count(*) + count(*) FILTER (WHERE fc.kind <> 'added' AND fc.kind <> 'removed') INTO want
    FROM feature_changes fc
    WHERE fc.job_id = $1 AND fc.kind IN ('added', 'removed', 'geometry', 'geometry+attributes');
    IF want > (SELECT j.feature_count FROM jobs j WHERE j.job_id = $1) THEN
        RETURN; -- more parcels to count than the version has: computed whole instead
    END IF;
    SELECT coalesce(array_agg(x.geom), '{}'), coalesce(array_agg(x.area), '{}'), coalesce(array_agg(x.sign), '{}')
    INTO geoms, areas, signs
    FROM (
        -- the rows the job wrote: found through the GiST index by their
        -- new box, among the job's rows
        SELECT p.geom, p.area_m2 AS area, 1 AS sign
        FROM feature_changes fc
        CROSS JOIN LATERAL (SELECT p.geom, p.area_m2 FROM parcels p
                            WHERE p.job_ref = ref AND p.geom && fc.new_bbox::geometry
                              AND coalesce(p.feature_id, p.id) = fc.feature_id
                            LIMIT 1) p
        WHERE fc.job_id = $1 AND fc.kind IN ('added', 'geometry', 'geometry+attributes')
        UNION ALL
        -- the rows it retired, as the history kept them
        SELECT h.geom, h.area_m2, -1
        FROM geoingest_history_rows($1, 'parcels') h
        JOIN feature_changes fc ON fc.job_id = $1 AND fc.feature_id = h.feature_id
        WHERE fc.kind IN ('removed', 'geometry', 'geometry+attributes')
    ) x;
    IF cardinality(geoms) <> want THEN
        RETURN; -- a row is missing: computed whole instead
    END IF;
    RETURN QUERY
    SELECT x.unit_id, sum(x.pos_parcels)::bigint, sum(x.pos_area_m2)::double precision,
           sum(x.int_parcels)::bigint, sum(x.int_area_m2)::double precision
    FROM (SELECT c.unit_id, c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
          FROM report_assignment_cells c
          WHERE c.parcel_job_id = base AND c.admin_generation = $2
          UNION ALL
          SELECT r.unit_id, r.pos_parcels, r.pos_area_m2, r.int_parcels, r.int_area_m2
          FROM geoingest_report_compute_rows(geoms, areas, signs, $3, $4) r) x
    GROUP BY x.unit_id
    HAVING sum(x.pos_parcels) <> 0 OR sum(x.int_parcels) <> 0
    ORDER BY x.unit_id;
END
$$;

-- geoingest_upgrade_match_hashes: the match hashes stored before 0044
-- (MD5) are recomputed by the server at every later version of their
-- source, as are those never stored (a source whose geometry the server
-- transforms), until a version rewrites the row (0044): some 2.6 s per
-- 1,000,000 rows and version. The maintainer rewrites them to 0044's form
-- in the background, a batch at a time (ingest.Maintainer's Hashes):
-- this function reads the n rows of current job job_id after ctid after
-- (in ctid order; NULL: from the start), rewrites the hashes among them
-- that are not of 0044's form (each to the value the match would compute
-- for it: the same function), and returns how many it rewrote and the
-- last ctid read (NULL: the job's rows are all read). A stored value of
-- 0044's form is never changed, so a batch is idempotent, and each is
-- its own transaction: killed, it is rolled back. It takes the source's
-- row lock without waiting, as the compactor does (a write gate holds it
-- while it matches the old generation's rows by ctid, which an UPDATE
-- moves): busy is true, and nothing done, when a gate holds it.
CREATE FUNCTION geoingest_upgrade_match_hashes(job_id text, after tid, n int, OUT rewritten bigint, OUT scanned_to tid, OUT busy boolean)
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

-- Rights: the history's functions read geoingest_store, which only the
-- writer may use, and retire_whole changes it: they run with the owner's
-- rights (CREATE OR REPLACE reset jobs_deleted's). The analyst may read
-- the history (as the as-of function does), not retire.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_retire_whole(text, bigint) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_history_rows(text, text) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_jobs_deleted() SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_upgrade_match_hashes(text, tid, int) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_upgrade_match_hashes(text, tid, int) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_upgrade_match_hashes(text, tid, int) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_upgrade_match_hashes(text, tid, int) TO geoingest_writer;
    END IF;
    REVOKE EXECUTE ON FUNCTION geoingest_retire_whole(text, bigint) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_retire_whole(text, bigint) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_retire_whole(text, bigint) TO geoingest_writer;
    END IF;
END
$$;
