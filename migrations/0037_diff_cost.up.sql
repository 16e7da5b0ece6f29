-- geoingest schema, version 37: what a new version costs
-- (docs/benchmarks.md, "Versions as changes").
--
-- 1. Retired rows go to history with one statement.
-- The history trigger (0033, 0035) copies each retired row into
-- feature_history as it is deleted, some 40 us a row: 40 s for a
-- 1,000,000-row generation that a new version replaces whole, more than
-- the load of the new version itself. geoingest_drop_job_features now
-- copies the rows it retires with one INSERT ... SELECT and deletes them
-- with the trigger told to pass (geoingest.history_job empty for that
-- statement): the same rows in feature_history, by the trigger's own rule
-- (history recorded only when the gate named its job, and never the rows
-- of the retiring job's own ref). A diff's deleted rows (the changed and
-- removed ones, geoingest_diff_apply) likewise.
--
-- 2. A version in which most rows changed goes straight into its own
-- table: the writer streams every row of it from its spool there, each
-- with the feature id the match gave it (geoingest_diff_rewrite_list,
-- geoingest_diff_rewrite_page), instead of into a temporary table first
-- and then, with the unchanged rows of the old generation, into its table
-- (geoingest_diff_apply_direct). The changes are recorded by one function
-- for both ways (geoingest_diff_changes), reading the new rows where they
-- are.
--
-- 3. The match (geoingest_diff_plan) reads the version's keys once for
-- their duplicates and skips the content rule when the key left nothing
-- to match on one side.

CREATE OR REPLACE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t   text := geoingest_job_table(target, job_ref);
    n   bigint;
    job text := current_setting('geoingest.history_job', true);
BEGIN
    IF job IS NOT NULL AND job <> ''
       AND job_ref IS DISTINCT FROM nullif(current_setting('geoingest.history_ref', true), '')::bigint THEN
        EXECUTE format('INSERT INTO feature_history (retired_by, target_table, feature_id, layer, feature_index, properties, geom, area_m2)
                        SELECT $2, $3, coalesce(o.feature_id, o.id), o.layer, o.feature_index, o.properties, o.geom, o.area_m2
                        FROM geoingest_store.%I o WHERE o.job_ref = $1', t) USING job_ref, job, target;
        PERFORM set_config('geoingest.history_job', '', true);
        EXECUTE format('DELETE FROM geoingest_store.%I WHERE job_ref = $1', t) USING job_ref;
        GET DIAGNOSTICS n = ROW_COUNT;
        PERFORM set_config('geoingest.history_job', job, true);
    ELSE
        EXECUTE format('DELETE FROM geoingest_store.%I WHERE job_ref = $1', t) USING job_ref;
        GET DIAGNOSTICS n = ROW_COUNT;
    END IF;
    IF job_ref > 0 THEN
        INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
        VALUES (t, target, coalesce((SELECT j.job_id FROM jobs j WHERE j.job_ref = geoingest_drop_job_features.job_ref), ''),
                job_ref, NULL, n)
        ON CONFLICT (table_name) DO NOTHING;
    END IF;
END
$$;

-- Rights, as before: CREATE OR REPLACE reset SECURITY DEFINER and SET.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_drop_job_features(text, bigint) SECURITY DEFINER SET search_path = %I, pg_temp',
                   current_schema());
END
$$;

-- geoingest_diff_changes finishes the match that geoingest_diff_plan
-- began and records the changes (job_changes' counts in r,
-- feature_changes, feature_lineage, as 0025), before any row moves: the
-- overlap rule among the rows still unmatched (intersection over union at
-- least min_iou, each the other's best); ot is the old generation's
-- table, inc the relation that holds every new row not unchanged
-- (pg_temp.geoingest_incoming, or the new generation's own table), both
-- quoted names the write gate's functions made, never input.
CREATE FUNCTION geoingest_diff_changes(job_id text, ot text, inc text, min_iou double precision, INOUT r job_changes)
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
    npairs bigint;
BEGIN
    -- 3. Overlap, mutual best among the rest (as 0028), when both sides
    -- have some left.
    IF EXISTS (SELECT FROM pg_temp.geoingest_match_added) AND EXISTS (SELECT FROM pg_temp.geoingest_match_removed) THEN
        DROP TABLE IF EXISTS pg_temp.geoingest_match_overlap;
        EXECUTE format('CREATE TEMP TABLE geoingest_match_overlap ON COMMIT DROP AS
                        WITH n AS (SELECT i.feature_index AS fi, i.geom FROM pg_temp.geoingest_match_added a
                                   JOIN %2$s i ON i.feature_index = a.fi),
                             o AS (SELECT m.rid, m.fid, t.geom FROM pg_temp.geoingest_match_removed m JOIN %1$s t ON t.ctid = m.rid),
                             p AS (SELECT n.fi, o.rid, o.fid, ST_Area(n.geom) AS na, ST_Area(o.geom) AS oa,
                                          ST_Area(ST_Intersection(n.geom, o.geom)) AS ia
                                   FROM n JOIN o ON n.geom && o.geom
                                   WHERE least(ST_Area(n.geom), ST_Area(o.geom)) >= $1 * greatest(ST_Area(n.geom), ST_Area(o.geom))
                                     AND ST_Intersects(n.geom, o.geom)),
                             c AS (SELECT fi, rid, fid, ia / nullif(na + oa - ia, 0) AS iou FROM p),
                             bn AS (SELECT DISTINCT ON (fi) fi, rid, fid, iou FROM c WHERE iou >= $1 ORDER BY fi, iou DESC, fid),
                             bo AS (SELECT DISTINCT ON (rid) fi, rid FROM c WHERE iou >= $1 ORDER BY rid, iou DESC, fi)
                        SELECT bn.fi, bn.rid, bn.fid, ''overlap''::text AS how,
                               i.geom_hash IS DISTINCT FROM m.gh AS gchg, i.props_hash IS DISTINCT FROM m.ph AS pchg
                        FROM bn JOIN bo USING (fi, rid)
                        JOIN %2$s i ON i.feature_index = bn.fi
                        JOIN pg_temp.geoingest_match_old m ON m.rid = bn.rid', ot, inc) USING min_iou;
        INSERT INTO pg_temp.geoingest_match_pairs SELECT * FROM pg_temp.geoingest_match_overlap;
        INSERT INTO pg_temp.geoingest_match_changed SELECT * FROM pg_temp.geoingest_match_overlap o WHERE o.gchg OR o.pchg;
        DELETE FROM pg_temp.geoingest_match_added a USING pg_temp.geoingest_match_overlap o WHERE a.fi = o.fi;
        DELETE FROM pg_temp.geoingest_match_removed m USING pg_temp.geoingest_match_overlap o WHERE m.rid = o.rid;
    END IF;

    -- The changes, before any row moves (the old rows are found by ctid).
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, matched_by, old_bbox, new_bbox, area_delta_m2)
                    SELECT $1, p.fid,
                           CASE WHEN p.gchg AND p.pchg THEN ''geometry+attributes''
                                WHEN p.gchg THEN ''geometry'' ELSE ''attributes'' END,
                           p.how, ST_Envelope(t.geom), ST_Envelope(i.geom), i.area_m2 - t.area_m2
                    FROM pg_temp.geoingest_match_changed p
                    JOIN %2$s i ON i.feature_index = p.fi
                    JOIN %1$s t ON t.ctid = p.rid', ot, inc) USING job_id;
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, new_bbox, area_delta_m2)
                    SELECT $1, i.id, ''added'', ST_Envelope(i.geom), i.area_m2
                    FROM pg_temp.geoingest_match_added a JOIN %s i ON i.feature_index = a.fi', inc) USING job_id;
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, old_bbox, area_delta_m2)
                    SELECT $1, m.fid, ''removed'', ST_Envelope(t.geom), -t.area_m2
                    FROM pg_temp.geoingest_match_removed m JOIN %1$s t ON t.ctid = m.rid', ot, inc) USING job_id;
    EXECUTE format('INSERT INTO feature_lineage (job_id, old_feature_id, new_feature_id, shared_m2)
                    SELECT $1, m.fid, i.id, ST_Area(ST_Intersection(i.geom, t.geom)::geography)
                    FROM pg_temp.geoingest_match_added a JOIN %2$s i ON i.feature_index = a.fi,
                         pg_temp.geoingest_match_removed m JOIN %1$s t ON t.ctid = m.rid
                    WHERE i.geom && t.geom
                      AND ST_Area(ST_Intersection(i.geom, t.geom)) > 0.01 * least(ST_Area(i.geom), ST_Area(t.geom))',
                   ot, inc) USING job_id;
    GET DIAGNOSTICS r.lineage = ROW_COUNT;

    SELECT count(*) FILTER (WHERE p.gchg), count(*) FILTER (WHERE p.pchg)
    INTO r.geometry, r.attributes FROM pg_temp.geoingest_match_changed p;
    SELECT count(*), count(*) FILTER (WHERE p.how = 'key'), count(*) FILTER (WHERE p.how = 'content'),
           count(*) FILTER (WHERE p.how = 'overlap')
    INTO npairs, r.by_key, r.by_content, r.by_overlap FROM pg_temp.geoingest_match_pairs p;
    r.unchanged := npairs - (SELECT count(*) FROM pg_temp.geoingest_match_changed);
    r.added := (SELECT count(*) FROM pg_temp.geoingest_match_added);
    r.removed := (SELECT count(*) FROM pg_temp.geoingest_match_removed);
    SELECT ST_Extent(e)::geometry INTO r.bbox
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_changes.job_id
          UNION ALL SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_changes.job_id) x(e);

END
$$;

-- geoingest_diff_apply as 0036 made it, its changes recorded by
-- geoingest_diff_changes, and the rows it deletes in place copied to
-- history with one statement.
CREATE OR REPLACE FUNCTION geoingest_diff_apply(job_id text, base_job_id text, target text, old_ref bigint, min_iou double precision,
                                                duplicate_keys bigint, new_ref bigint)
RETURNS job_changes
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
    ot   text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    nt   text;
    r    job_changes;
    del    numeric;
    ins    numeric;
    keep   numeric;
    hjob   text;
    tn     text := geoingest_typed_list(target, NULL);
    ti     text := geoingest_typed_list(target, 'i');
    tt     text := geoingest_typed_list(target, 't');
BEGIN
    SELECT geoingest_diff_apply.job_id, target, j.source_bucket, j.source_key, nullif(base_job_id, '')
    INTO r.job_id, r.target_table, r.source_bucket, r.source_key, r.base_job_id
    FROM jobs j WHERE j.job_id = geoingest_diff_apply.job_id;
    r.added := 0; r.removed := 0; r.geometry := 0; r.attributes := 0; r.unchanged := 0;
    r.by_key := 0; r.by_content := 0; r.by_overlap := 0; r.duplicate_keys := duplicate_keys; r.lineage := 0;
    r.recorded_at := now();
    r.xid := pg_current_xact_id();


    r := geoingest_diff_changes(job_id, ot, 'pg_temp.geoingest_incoming', min_iou, r);

    IF new_ref = old_ref THEN
        -- The old generation's storage becomes the new one.
        -- The retired rows go to history with one statement (as
        -- geoingest_drop_job_features), the row trigger told to pass.
        hjob := current_setting('geoingest.history_job', true);
        PERFORM set_config('geoingest.history_job', '', true);
        EXECUTE format('WITH x AS (SELECT m.rid FROM pg_temp.geoingest_match_removed m
                                   UNION ALL SELECT p.rid FROM pg_temp.geoingest_match_changed p),
                             d AS (DELETE FROM %s t USING x WHERE t.ctid = x.rid AND t.job_ref = $1
                                   RETURNING t.*),
                             h AS (INSERT INTO feature_history (retired_by, target_table, feature_id, layer, feature_index,
                                                                properties, geom, area_m2)
                                   SELECT $2, $3, coalesce(d.feature_id, d.id), d.layer, d.feature_index, d.properties, d.geom, d.area_m2
                                   FROM d WHERE $2 <> '''')
                        SELECT coalesce(sum(geoingest_row_hash(d.feature_index, d.properties, d.geom)), 0) FROM d', ot)
            INTO del USING old_ref, coalesce(hjob, ''), target;
        PERFORM set_config('geoingest.history_job', coalesce(hjob, ''), true);
        EXECUTE format('WITH a AS (INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash%s)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash%s
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', ot, tn, ti) INTO ins USING old_ref;
    ELSE
        -- A new table: the rows sent and the unchanged ones.
        nt := format('geoingest_store.%I', geoingest_job_table(target, new_ref));
        EXECUTE format('WITH a AS (INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash%s)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash%s
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', nt, tn, ti) INTO ins USING new_ref;
        EXECUTE format('WITH k AS (INSERT INTO %1$s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash%3$s)
                                   SELECT t.id, $1, t.feature_index, t.layer, t.properties, t.geom, t.area_m2, t.feature_id,
                                          t.match_key, t.geom_hash, t.props_hash%4$s
                                   FROM pg_temp.geoingest_match_pairs p JOIN %2$s t ON t.ctid = p.rid
                                   WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_changed c WHERE c.rid = p.rid)
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(k.h), 0) FROM k', nt, ot, tn, tt) INTO keep USING new_ref;
        -- Every row of the new generation was summed, as it was written.
        SELECT j.features_checksum::numeric - keep INTO del FROM jobs j WHERE j.job_id = base_job_id;
        EXECUTE format('CREATE INDEX ON %s USING gist (geom)', nt);
    END IF;
    UPDATE jobs SET features_checksum = (b.features_checksum::numeric - del + ins)::text
    FROM jobs b WHERE jobs.job_id = geoingest_diff_apply.job_id AND b.job_id = base_job_id;
    INSERT INTO job_changes VALUES (r.*);
    RETURN r;
END
$$;

-- geoingest_diff_rewrite_list lists, for a version written straight into
-- its own table, every row the writer's spool holds and has not sent yet
-- (not 'must': those are in geoingest_incoming), with the feature id the
-- match gave it (NULL: added), in spool order; the writer reads it a page
-- at a time (geoingest_diff_rewrite_page). It returns the count.
CREATE FUNCTION geoingest_diff_rewrite_list() RETURNS bigint
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
    n bigint;
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_rewrite;
    CREATE TEMP TABLE geoingest_rewrite ON COMMIT DROP AS
    SELECT h.spool_off, h.spool_len, p.fid
    FROM pg_temp.geoingest_version h LEFT JOIN pg_temp.geoingest_match_pairs p ON p.fi = h.feature_index
    WHERE NOT h.must AND h.spool_off IS NOT NULL
    ORDER BY h.spool_off;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_diff_rewrite_page is the next page of that list: at most n
-- rows past the spool offset after.
CREATE FUNCTION geoingest_diff_rewrite_page(after bigint, n integer) RETURNS TABLE (spool_off bigint, spool_len integer, fid bigint)
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
BEGIN
    RETURN QUERY EXECUTE 'SELECT w.spool_off, w.spool_len, w.fid FROM pg_temp.geoingest_rewrite w
                          WHERE w.spool_off > $1 ORDER BY w.spool_off LIMIT $2' USING after, n;
END
$$;

-- geoingest_diff_apply_direct is geoingest_diff_apply for a version
-- written straight into its own table (new_ref's, made by
-- geoingest_create_job_storage): the writer has streamed its spooled rows
-- there with their feature ids; the rows in geoingest_incoming (measured,
-- repaired or transformed by the server) join them, the changes are
-- recorded (geoingest_diff_changes), the rows the overlap rule matched
-- take their predecessors' feature ids, and the table is summed (count,
-- which must be the ledger's, and checksum) and indexed. The old
-- generation is left for the caller to retire.
CREATE FUNCTION geoingest_diff_apply_direct(job_id text, base_job_id text, target text, old_ref bigint, min_iou double precision,
                                            duplicate_keys bigint, new_ref bigint)
RETURNS job_changes
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
    ot   text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    nt   text := format('geoingest_store.%I', geoingest_job_table(target, new_ref));
    r    job_changes;
    n    bigint;
    want bigint;
    sum  numeric;
    tn   text := geoingest_typed_list(target, NULL);
    ti   text := geoingest_typed_list(target, 'i');
BEGIN
    IF new_ref <= 0 OR new_ref = old_ref THEN
        RAISE EXCEPTION 'geoingest_diff_apply_direct: job % has no table of its own (ref %)', job_id, new_ref;
    END IF;
    SELECT geoingest_diff_apply_direct.job_id, target, j.source_bucket, j.source_key, nullif(base_job_id, ''), j.feature_count
    INTO r.job_id, r.target_table, r.source_bucket, r.source_key, r.base_job_id, want
    FROM jobs j WHERE j.job_id = geoingest_diff_apply_direct.job_id;
    r.added := 0; r.removed := 0; r.geometry := 0; r.attributes := 0; r.unchanged := 0;
    r.by_key := 0; r.by_content := 0; r.by_overlap := 0; r.duplicate_keys := duplicate_keys; r.lineage := 0;
    r.recorded_at := now();
    r.xid := pg_current_xact_id();

    EXECUTE format('INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                    match_key, geom_hash, props_hash%s)
                    SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, p.fid,
                           i.match_key, i.geom_hash, i.props_hash%s
                    FROM pg_temp.geoingest_incoming i LEFT JOIN pg_temp.geoingest_match_pairs p ON p.fi = i.feature_index', nt, tn, ti)
        USING new_ref;
    ANALYZE pg_temp.geoingest_match_pairs;
    r := geoingest_diff_changes(job_id, ot, nt, min_iou, r);
    IF r.by_overlap > 0 THEN
        EXECUTE format('UPDATE %s t SET feature_id = o.fid FROM pg_temp.geoingest_match_overlap o WHERE t.feature_index = o.fi', nt);
    END IF;

    EXECUTE format('SELECT count(*), coalesce(sum(geoingest_row_hash(t.feature_index, t.properties, t.geom)), 0) FROM %s t
                    WHERE t.job_ref = $1', nt)
        INTO n, sum USING new_ref;
    IF n IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'job %: its new table holds % rows, the version has %: not applied', job_id, n, want
            USING ERRCODE = 'data_exception';
    END IF;
    UPDATE jobs SET features_checksum = sum::text WHERE jobs.job_id = geoingest_diff_apply_direct.job_id;
    EXECUTE format('CREATE INDEX ON %s USING gist (geom)', nt);
    INSERT INTO job_changes VALUES (r.*);
    RETURN r;
END
$$;

-- geoingest_diff_plan as 0032 made it, cheaper: the new keys' duplicates
-- counted once (no CTE read three times), and the content rule skipped
-- when the key left no row unmatched on one side.
CREATE OR REPLACE FUNCTION geoingest_diff_plan(target text, old_ref bigint, key_fields text[], OUT total bigint, OUT to_write bigint, OUT duplicate_keys bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot    text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    sig   text := key_fields::text || ':';
    kx    text := 'NULL::text';
    npairs bigint := 0;
    nold   bigint;
BEGIN
    duplicate_keys := 0;
    IF keyed THEN
        -- A stored key under the same fields is taken as it is; any other
        -- is computed.
        kx := format('nullif(CASE WHEN starts_with(o.match_key, $2) THEN o.match_key ELSE $2 || %s END, $2)',
                     geoingest_match_key_expr(key_fields, 'o.properties', 3));
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_match_old, pg_temp.geoingest_match_pairs, pg_temp.geoingest_match_changed,
                         pg_temp.geoingest_match_added, pg_temp.geoingest_match_removed,
                         pg_temp.geoingest_match_dupk;
    EXECUTE format('CREATE TEMP TABLE geoingest_match_old ON COMMIT DROP AS
                    SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, %s AS k,
                           coalesce(o.geom_hash, md5(ST_AsEWKB(o.geom))::uuid) AS gh,
                           coalesce(o.props_hash, md5(o.properties::text)::uuid) AS ph
                    FROM %s o WHERE o.job_ref = $1', kx, ot) USING old_ref, sig, key_fields;
    CREATE TEMP TABLE geoingest_match_pairs (fi bigint, rid tid, fid bigint, how text, gchg boolean, pchg boolean) ON COMMIT DROP;
    ANALYZE pg_temp.geoingest_version;
    ANALYZE pg_temp.geoingest_match_old;

    -- 1. The key, where unique on both sides.
    IF keyed THEN
        UPDATE pg_temp.geoingest_match_old o SET k = NULL
        WHERE o.k IN (SELECT d.k FROM pg_temp.geoingest_match_old d WHERE d.k IS NOT NULL GROUP BY d.k HAVING count(*) > 1);
        -- The new rows whose key is not unique, with how many have it.
        CREATE TEMP TABLE geoingest_match_dupk ON COMMIT DROP AS
        SELECT h.match_key AS k, count(*) AS n FROM pg_temp.geoingest_version h
        WHERE h.match_key IS NOT NULL AND h.match_key <> sig GROUP BY h.match_key HAVING count(*) > 1;
        SELECT coalesce(sum(d.n), 0) INTO duplicate_keys FROM pg_temp.geoingest_match_dupk d;
        INSERT INTO pg_temp.geoingest_match_pairs
        SELECT h.feature_index, o.rid, o.fid, 'key', h.geom_hash IS DISTINCT FROM o.gh, h.props_hash IS DISTINCT FROM o.ph
        FROM pg_temp.geoingest_version h JOIN pg_temp.geoingest_match_old o ON o.k = h.match_key
        WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_dupk d WHERE d.k = h.match_key);
        GET DIAGNOSTICS npairs = ROW_COUNT;
    END IF;

    -- 2. Identical content, paired in order among equals: only when both
    -- sides have rows left (a keyed version whose keys all matched has
    -- none).
    SELECT count(*) INTO total FROM pg_temp.geoingest_version;
    SELECT count(*) INTO nold FROM pg_temp.geoingest_match_old;
    IF npairs < total AND npairs < nold THEN
    INSERT INTO pg_temp.geoingest_match_pairs
    WITH n AS (SELECT h.feature_index AS fi, h.geom_hash AS gh, h.props_hash AS ph,
                      row_number() OVER (PARTITION BY h.geom_hash, h.props_hash ORDER BY h.feature_index) AS i
               FROM pg_temp.geoingest_version h
               WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.fi = h.feature_index)),
         o AS (SELECT m.rid, m.fid, m.gh, m.ph, row_number() OVER (PARTITION BY m.gh, m.ph ORDER BY m.fid) AS i
               FROM pg_temp.geoingest_match_old m
               WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.rid = m.rid))
    SELECT n.fi, o.rid, o.fid, 'content', false, false FROM n JOIN o USING (gh, ph, i);
    SELECT count(*) INTO npairs FROM pg_temp.geoingest_match_pairs;
    END IF;

    -- What is left to do, in small tables: the changed pairs, the new
    -- rows and the old rows still unmatched (the overlap rule's, then added
    -- and removed).
    CREATE TEMP TABLE geoingest_match_changed ON COMMIT DROP AS
    SELECT * FROM pg_temp.geoingest_match_pairs p WHERE p.gchg OR p.pchg;
    CREATE TEMP TABLE geoingest_match_added (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_removed (rid tid, fid bigint) ON COMMIT DROP;
    IF total > npairs THEN
        INSERT INTO pg_temp.geoingest_match_added
        SELECT h.feature_index FROM pg_temp.geoingest_version h
        WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.fi = h.feature_index);
    END IF;
    IF nold > npairs THEN
        INSERT INTO pg_temp.geoingest_match_removed
        SELECT m.rid, m.fid FROM pg_temp.geoingest_match_old m
        WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.rid = m.rid);
    END IF;
    ANALYZE pg_temp.geoingest_match_changed;
    ANALYZE pg_temp.geoingest_match_added;
    ANALYZE pg_temp.geoingest_match_removed;
    SELECT (SELECT count(*) FROM pg_temp.geoingest_match_changed) + (SELECT count(*) FROM pg_temp.geoingest_match_added)
    INTO to_write;
END
$function$;
