-- geoingest schema, version 47: every stored feature row gets raw_hash, a
-- 64-bit hash of the feature's bytes in its file salted with everything
-- else that decides the row (docs/design.md, "Versions as changes"). Two
-- equal raw hashes under one source mean the same stored row, so a new
-- version's features whose raw hash matches an old row's need not be
-- parsed to be known unchanged.
--
-- NULL means "not known": rows written before this migration (ADD COLUMN
-- without a default changes the catalog only, nothing is rewritten), and
-- rows whose content the server made or changed. The functions that copy
-- rows carry it where the content is copied unchanged (the diff's inserted
-- and kept rows, compaction, a held version's move and approval) and the
-- ones that change a row's content on the server set it NULL (the area
-- measured and the geometry repaired by geoingest_finish_job_table and
-- geoingest_finish_incoming). The rows the server transforms from another
-- CRS (geoingest_insert_staged*, geoingest_insert_staged_incoming) never
-- list it, so they are NULL.

ALTER TABLE geoingest_store.parcels ADD COLUMN raw_hash bigint;
ALTER TABLE geoingest_store.admin_units ADD COLUMN raw_hash bigint;

-- A held version's own table (0027) and a table retired whole (0046) are
-- no partitions: they get the column too, so that the held one can be
-- attached when approved.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'geoingest_store' AND c.relkind = 'r' AND NOT c.relispartition
               AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'feature_index')
               AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'raw_hash')
    LOOP
        EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN raw_hash bigint', t.relname);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_diff_apply(job_id text, base_job_id text, target text, old_ref bigint, min_iou double precision, duplicate_keys bigint, new_ref bigint)
 RETURNS job_changes
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
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
                                                    match_key, geom_hash, props_hash, raw_hash%s)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash, i.raw_hash%s
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', ot, tn, ti) INTO ins USING old_ref;
    ELSE
        -- A new table: the rows sent and the unchanged ones.
        nt := format('geoingest_store.%I', geoingest_job_table(target, new_ref));
        EXECUTE format('WITH a AS (INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash, raw_hash%s)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash, i.raw_hash%s
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', nt, tn, ti) INTO ins USING new_ref;
        EXECUTE format('WITH k AS (INSERT INTO %1$s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash, raw_hash%3$s)
                                   SELECT t.id, $1, t.feature_index, t.layer, t.properties, t.geom, t.area_m2, t.feature_id,
                                          t.match_key, t.geom_hash, t.props_hash, t.raw_hash%4$s
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
$function$;;

CREATE OR REPLACE FUNCTION geoingest_diff_apply_direct(job_id text, base_job_id text, target text, old_ref bigint, min_iou double precision, duplicate_keys bigint, new_ref bigint)
 RETURNS job_changes
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
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
                                    match_key, geom_hash, props_hash, raw_hash%s)
                    SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, p.fid,
                           i.match_key, i.geom_hash, i.props_hash, i.raw_hash%s
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
$function$;;

CREATE OR REPLACE FUNCTION geoingest_finish_incoming(repair boolean, invalid bigint[], server_check boolean, job_id text, OUT written bigint, OUT area_m2 double precision, OUT features_checksum text, OUT repaired bigint, OUT collapsed bigint)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        WITH m AS (UPDATE pg_temp.geoingest_incoming i SET area_m2 = ST_Area(i.geom::geography), raw_hash = NULL
                   WHERE i.area_m2 IS NULL RETURNING i.feature_index, i.geom)
        SELECT array_agg(m.feature_index) FILTER (WHERE NOT ST_IsValid(m.geom)) INTO found FROM m;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            SELECT i.feature_index, ST_IsValidReason(i.geom) AS reason INTO first FROM pg_temp.geoingest_incoming i
            WHERE i.feature_index = (SELECT min(x) FROM unnest(bad) x) ORDER BY i.id LIMIT 1;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        WITH r AS (SELECT i.id, ST_Multi(ST_CollectionExtract(ST_MakeValid(i.geom), 3)) AS g
                   FROM pg_temp.geoingest_incoming i WHERE i.feature_index = ANY(bad)),
             up AS (UPDATE pg_temp.geoingest_incoming i SET (geom, area_m2, raw_hash) = (r.g, ST_Area(r.g::geography), NULL)
                    FROM r WHERE i.id = r.id AND NOT ST_IsEmpty(r.g) RETURNING 1),
             gone AS (DELETE FROM pg_temp.geoingest_incoming i USING r WHERE i.id = r.id AND ST_IsEmpty(r.g)
                      RETURNING i.feature_index, i.layer, i.properties, i.geom),
             q AS (INSERT INTO geoingest_quarantine (job_id, feature_index, layer, rule, reason, properties, geom)
                   SELECT geoingest_finish_incoming.job_id, gone.feature_index, gone.layer, 'collapsed',
                          'no polygonal area left after repair: ' || ST_IsValidReason(gone.geom), gone.properties, gone.geom
                   FROM gone WHERE coalesce(geoingest_finish_incoming.job_id, '') <> ''
                   ON CONFLICT DO NOTHING)
        SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM gone) INTO repaired, collapsed;
        repaired := repaired + collapsed;
    END IF;
    SELECT count(*), coalesce(sum(i.area_m2), 0), coalesce(sum(geoingest_row_hash(i.feature_index, i.properties, i.geom)), 0)::text
    INTO written, area_m2, features_checksum FROM pg_temp.geoingest_incoming i;
END
$function$;;

CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean, invalid bigint[], server_check boolean, OUT written bigint, OUT area_m2 double precision, OUT features_checksum text, OUT repaired bigint, OUT collapsed bigint)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    t text := format('geoingest_store.%I', geoingest_job_table(target, job_ref));
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %s SET area_m2 = ST_Area(geom::geography), raw_hash = NULL
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
        EXECUTE format('UPDATE %s SET (geom, area_m2, raw_hash) = (SELECT v.g, ST_Area(v.g::geography), NULL::bigint
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
$function$;;

CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean, invalid bigint[], server_check boolean, job_id text, OUT written bigint, OUT area_m2 double precision, OUT features_checksum text, OUT repaired bigint, OUT collapsed bigint)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    t text := format('geoingest_store.%I', geoingest_job_table(target, job_ref));
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %s SET area_m2 = ST_Area(geom::geography), raw_hash = NULL
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
        EXECUTE format('WITH r AS (SELECT id, ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3)) AS g
                                   FROM %1$s WHERE job_ref = $1 AND feature_index = ANY($2)),
                             up AS (UPDATE %1$s t SET (geom, area_m2, raw_hash) = (r.g, ST_Area(r.g::geography), NULL)
                                    FROM r WHERE t.job_ref = $1 AND t.id = r.id AND NOT ST_IsEmpty(r.g)
                                    RETURNING 1),
                             gone AS (DELETE FROM %1$s t USING r WHERE t.job_ref = $1 AND t.id = r.id AND ST_IsEmpty(r.g)
                                      RETURNING t.feature_index, t.layer, t.properties, t.geom),
                             q AS (INSERT INTO geoingest_quarantine (job_id, feature_index, layer, rule, reason, properties, geom)
                                   SELECT $3, feature_index, layer, ''collapsed'',
                                          ''no polygonal area left after repair: '' || ST_IsValidReason(geom), properties, geom
                                   FROM gone WHERE $3 <> ''''
                                   ON CONFLICT DO NOTHING)
                        SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM gone)', t)
            INTO repaired, collapsed USING job_ref, bad, coalesce(job_id, '');
        repaired := repaired + collapsed;
    END IF;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM %s WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum USING job_ref;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %s USING gist (geom)', t);
    END IF;
END
$function$;;

CREATE OR REPLACE FUNCTION geoingest_fold_job(job_id text, OUT new_ref bigint, OUT moved bigint)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    j      record;
    own    text;
    shared text;
    n      bigint;
    area   double precision;
    sum    text;
    tn     text;
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
    tn := geoingest_typed_list(j.target_table, NULL);
    EXECUTE format('WITH ins AS (INSERT INTO geoingest_store.%1$I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                                 match_key, geom_hash, props_hash, raw_hash%2$s)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2, feature_id,
                                        match_key, geom_hash, props_hash, raw_hash%2$s FROM geoingest_store.%3$I
                                 RETURNING feature_index, properties, geom, area_m2)
                    SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM ins', shared, tn, own)
        INTO n, area, sum USING new_ref;
    IF n <> j.feature_count OR sum <> j.features_checksum
       OR abs(area - j.total_area_m2) > 1e-9 * greatest(abs(area), abs(j.total_area_m2)) THEN
        RAISE EXCEPTION 'job %: its % rows (area %, checksum %) do not match the ledger (% features, area %, checksum %): not folded; run geoingest verify',
            geoingest_fold_job.job_id, n, area, sum, j.feature_count, j.total_area_m2, j.features_checksum
            USING ERRCODE = 'data_exception';
    END IF;
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_fold_job.job_id;
    EXECUTE format('DELETE FROM geoingest_store.%I', own);
    INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
    VALUES (own, j.target_table, geoingest_fold_job.job_id, j.job_ref, new_ref, n);
    moved := n;
END
$function$;;

CREATE OR REPLACE FUNCTION geoingest_pend_incoming(target text, new_ref bigint)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    n bigint;
BEGIN
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending version: new ref % is not positive', new_ref;
    END IF;
    EXECUTE format('INSERT INTO geoingest_store.%1$I (id, job_ref, feature_index, layer, properties, geom, area_m2,
                                                    match_key, geom_hash, props_hash, raw_hash%2$s)
                    SELECT id, $1, feature_index, layer, properties, geom, area_m2,
                           match_key, geom_hash, props_hash, raw_hash%2$s FROM pg_temp.geoingest_incoming',
                   geoingest_job_table(target, new_ref), geoingest_typed_list(target, NULL))
        USING new_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;;

CREATE OR REPLACE FUNCTION geoingest_pend_job_table(target text, job_id text, old_ref bigint, new_ref bigint)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    own text;
BEGIN
    IF old_ref > 0 THEN
        RETURN old_ref;
    END IF;
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending job %: new ref % is not positive', job_id, new_ref;
    END IF;
    own := geoingest_job_table(target, new_ref);
    EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                   own, geoingest_job_table(target, -1), new_ref);
    EXECUTE format('WITH moved AS (DELETE FROM geoingest_store.%1$I WHERE job_ref = $1
                                   RETURNING id, feature_index, layer, properties, geom, area_m2, feature_id,
                                             match_key, geom_hash, props_hash, raw_hash%3$s)
                    INSERT INTO geoingest_store.%2$I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash, raw_hash%3$s)
                    SELECT id, $2, feature_index, layer, properties, geom, area_m2, feature_id,
                           match_key, geom_hash, props_hash, raw_hash%3$s FROM moved',
                   geoingest_job_table(target, -1), own, geoingest_typed_list(target, NULL))
        USING old_ref, new_ref;
    EXECUTE format('CREATE INDEX ON geoingest_store.%I USING gist (geom)', own);
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_pend_job_table.job_id;
    RETURN new_ref;
END
$function$;;

DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text)',
                             'geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;
