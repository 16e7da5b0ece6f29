-- Undoes 0051: the prefilter's join and the match read the old generation
-- each (0050's bodies; geoingest_prefilter_dedupe back).

DROP FUNCTION IF EXISTS geoingest_prefilter_unkept();

CREATE OR REPLACE FUNCTION geoingest_prefilter_create()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_raw, pg_temp.geoingest_kept;
    CREATE TEMP TABLE geoingest_raw (fi bigint, raw bigint) ON COMMIT DROP;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_match(target text, old_ref bigint, key_fields text[], OUT total bigint, OUT kept bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot    text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    sig   text := key_fields::text || ':';
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_kept;
    ANALYZE pg_temp.geoingest_raw;
    EXECUTE format('CREATE TEMP TABLE geoingest_kept ON COMMIT DROP AS
                    SELECT r.fi, o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, o.match_key, o.geom_hash, o.props_hash,
                           o.area_m2, $2 AND o.match_key IS NOT NULL AND o.match_key <> $3 AS bypass
                    FROM pg_temp.geoingest_raw r JOIN %s o ON o.raw_hash = r.raw
                    WHERE o.job_ref = $1 AND o.geom_hash < geoingest_hash_form_end()
                      AND o.props_hash < geoingest_hash_form_end()
                      AND (NOT $2 OR starts_with(o.match_key, $3))', ot) USING old_ref, keyed, sig;
    SELECT count(*) INTO total FROM pg_temp.geoingest_raw;
    SELECT count(*) INTO kept FROM pg_temp.geoingest_kept;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_kept()
 RETURNS SETOF bigint
 LANGUAGE plpgsql
AS $function$
BEGIN
    RETURN QUERY SELECT k.fi FROM pg_temp.geoingest_kept k;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_dedupe()
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
AS $function$
DECLARE
    n bigint;
BEGIN
    DELETE FROM pg_temp.geoingest_kept k
    WHERE k.ctid NOT IN (SELECT min(d.ctid) FROM pg_temp.geoingest_kept d GROUP BY d.fi);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_keep(target text, old_ref bigint, base_box double precision[],
                                                    OUT kept bigint, OUT area_m2 double precision,
                                                    OUT min_x double precision, OUT min_y double precision,
                                                    OUT max_x double precision, OUT max_y double precision,
                                                    OUT bypassed bigint, OUT bypassed_area double precision)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot    text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    c     record;
    found boolean[] := '{f,f,f,f}';
BEGIN
    INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
    SELECT k.fi, k.match_key, k.geom_hash, k.props_hash, k.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept k
    WHERE NOT k.bypass;
    SELECT count(*), sum(k.area_m2), count(*) FILTER (WHERE k.bypass), coalesce(sum(k.area_m2) FILTER (WHERE k.bypass), 0)
    INTO kept, area_m2, bypassed, bypassed_area FROM pg_temp.geoingest_kept k;
    IF cardinality(base_box) = 4 THEN
        -- The kept rows are some of the generation's, whose extent is
        -- base_box (as its version recorded it): a side that a kept row
        -- attains is theirs. The rows on its edges are few (the GiST
        -- index finds them); only a side none of them attains takes a
        -- pass over every kept row.
        DROP TABLE IF EXISTS pg_temp.geoingest_kept_edge;
        EXECUTE format('CREATE TEMP TABLE geoingest_kept_edge ON COMMIT DROP AS
                        SELECT o.ctid AS rid, o.geom::box3d AS b FROM %s o
                        WHERE o.job_ref = $1
                          AND (o.geom && ST_MakeEnvelope($2[1], $2[2], $2[1], $2[4], 4326)
                               OR o.geom && ST_MakeEnvelope($2[3], $2[2], $2[3], $2[4], 4326)
                               OR o.geom && ST_MakeEnvelope($2[1], $2[2], $2[3], $2[2], 4326)
                               OR o.geom && ST_MakeEnvelope($2[1], $2[4], $2[3], $2[4], 4326))', ot)
        USING old_ref, base_box;
        ANALYZE pg_temp.geoingest_kept_edge;
        -- The edge rows hashed, the kept ones scanned once.
        FOR c IN SELECT ST_XMin(e.b) AS x0, ST_YMin(e.b) AS y0, ST_XMax(e.b) AS x1, ST_YMax(e.b) AS y1
                 FROM pg_temp.geoingest_kept k JOIN pg_temp.geoingest_kept_edge e ON e.rid = k.rid LOOP
            found[1] := found[1] OR c.x0 = base_box[1];
            found[2] := found[2] OR c.y0 = base_box[2];
            found[3] := found[3] OR c.x1 = base_box[3];
            found[4] := found[4] OR c.y1 = base_box[4];
        END LOOP;
        IF found[1] AND found[2] AND found[3] AND found[4] THEN
            min_x := base_box[1]; min_y := base_box[2]; max_x := base_box[3]; max_y := base_box[4];
            RETURN;
        END IF;
    END IF;
    EXECUTE format('SELECT min(ST_XMin(b)), min(ST_YMin(b)), max(ST_XMax(b)), max(ST_YMax(b))
                    FROM (SELECT o.geom::box3d AS b FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                          WHERE o.job_ref = $1) x', ot)
    INTO min_x, min_y, max_x, max_y USING old_ref;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_send(target text, old_ref bigint, every_one boolean)
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    n  bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_temp.geoingest_kept) THEN
        RETURN 0;
    END IF;
    -- The match's tables exist only once it ran: each case is its own
    -- statement.
    IF every_one THEN
        EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2,
                                                                 match_key, geom_hash, props_hash, raw_hash)
                        SELECT $1, k.fi, o.layer, o.properties, o.geom, o.area_m2, o.match_key, o.geom_hash, o.props_hash, o.raw_hash
                        FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                        WHERE o.job_ref = $1
                          AND NOT EXISTS (SELECT FROM pg_temp.geoingest_incoming i WHERE i.feature_index = k.fi)', ot)
        USING old_ref;
    ELSE
        EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2,
                                                                 match_key, geom_hash, props_hash, raw_hash)
                        SELECT $1, k.fi, o.layer, o.properties, o.geom, o.area_m2, o.match_key, o.geom_hash, o.props_hash, o.raw_hash
                        FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                        WHERE o.job_ref = $1
                          AND k.fi IN (SELECT c.fi FROM pg_temp.geoingest_match_changed c
                                       UNION ALL SELECT a.fi FROM pg_temp.geoingest_match_added a)', ot)
        USING old_ref;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_diff_plan(target text, old_ref bigint, key_fields text[], skip_kept boolean, OUT total bigint, OUT to_write bigint, OUT duplicate_keys bigint)
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
    kept   bigint := 0;
    nbypass bigint := 0;
    excl   text := '';
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
                         pg_temp.geoingest_match_dupk, pg_temp.geoingest_match_dupc, pg_temp.geoingest_match_rest,
                         pg_temp.geoingest_match_kept;
    IF skip_kept AND keyed THEN
        -- The pairs kept by their bytes that stand for themselves (0050):
        -- left out of the match.
        excl := ' AND NOT EXISTS (SELECT FROM pg_temp.geoingest_kept kk WHERE kk.bypass AND kk.rid = o.ctid)';
    END IF;
    EXECUTE format('CREATE TEMP TABLE geoingest_match_old ON COMMIT DROP AS
                    SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, %s AS k,
                           CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                                ELSE geoingest_geom_hash(o.geom) END AS gh,
                           CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                                ELSE geoingest_props_hash(o.properties) END AS ph
                    FROM %s o WHERE o.job_ref = $1%s', kx, ot, excl) USING old_ref, sig, key_fields;
    IF excl <> '' THEN
        -- A pair kept by its bytes is the key's pair when its key is found
        -- once in the version and once among the rows: no other row of
        -- either side has it (the rows left in the match, the version's
        -- other rows), nor another such pair (by a 64-bit hash of the
        -- keys: a collision only puts a pair back). The others go back into
        -- the match, with the match columns their rows hold, the ones the
        -- writer would have given them; a pair that shares its key with
        -- one put back is put back too (the same hash), so the keys of
        -- those left out are found nowhere else.
        DROP TABLE IF EXISTS pg_temp.geoingest_kept_back;
        CREATE TEMP TABLE geoingest_kept_back ON COMMIT DROP AS
        SELECT k.fi FROM pg_temp.geoingest_kept k
        WHERE k.bypass
          AND (k.match_key IN (SELECT o.k FROM pg_temp.geoingest_match_old o WHERE o.k IS NOT NULL
                               UNION ALL
                               SELECT v.match_key FROM pg_temp.geoingest_version v WHERE v.match_key IS NOT NULL)
               OR hashtextextended(k.match_key, 0) IN (SELECT hashtextextended(d.match_key, 0) FROM pg_temp.geoingest_kept d
                                                       WHERE d.bypass GROUP BY 1 HAVING count(*) > 1));
        IF EXISTS (SELECT FROM pg_temp.geoingest_kept_back) THEN
            UPDATE pg_temp.geoingest_kept k SET bypass = false FROM pg_temp.geoingest_kept_back b WHERE b.fi = k.fi;
            INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
            SELECT k.fi, k.match_key, k.geom_hash, k.props_hash, k.area_m2, false, NULL, NULL
            FROM pg_temp.geoingest_kept k JOIN pg_temp.geoingest_kept_back b ON b.fi = k.fi;
            -- Each row once: features of the same bytes may have one.
            INSERT INTO pg_temp.geoingest_match_old (rid, fid, k, gh, ph)
            SELECT DISTINCT k.rid, k.fid, k.match_key, k.geom_hash, k.props_hash
            FROM pg_temp.geoingest_kept k JOIN pg_temp.geoingest_kept_back b ON b.fi = k.fi;
        END IF;
        SELECT count(*) INTO nbypass FROM pg_temp.geoingest_kept k WHERE k.bypass;
    END IF;
    CREATE TEMP TABLE geoingest_match_pairs (fi bigint, rid tid, fid bigint, how text, gchg boolean, pchg boolean) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_kept (n bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_dupk (k text, n bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_added (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_removed (rid tid, fid bigint) ON COMMIT DROP;
    ANALYZE pg_temp.geoingest_version;
    ANALYZE pg_temp.geoingest_match_old;
    SELECT count(*) INTO total FROM pg_temp.geoingest_version;
    SELECT count(*) INTO nold FROM pg_temp.geoingest_match_old;

    IF keyed THEN
        -- 1. The key, where unique on both sides: one FULL JOIN by key,
        -- which keeps only what is not an unchanged pair
        -- (geoingest_match_rest: the changed pairs, and the rows of either
        -- side it left, for the rules below) and counts the unchanged
        -- pairs (kept). Storing a row for each pair was most of a
        -- version's match where few features changed; they are stored
        -- only when a version is written whole into a table of its own
        -- (geoingest_diff_rewrite_list). Where no key repeats on one side
        -- and is found on the other, every row of either side is in the
        -- join once: the version's rows are kept plus the new rows in
        -- rest, and the old ones likewise. Where both sums hold, that is
        -- so (a repeated key found on the other side puts some row in the
        -- join twice and breaks one of them), so the pairs are the ones
        -- that the key's rule makes, with no aggregate of a million keys
        -- to find the repeated ones first; a key repeated among the
        -- version's rows that the join left is counted among those few.
        CREATE TEMP TABLE geoingest_match_rest (fi bigint, hk text, rid tid, fid bigint,
                                                hgh uuid, hph uuid, ogh uuid, oph uuid) ON COMMIT DROP;
        WITH j AS (SELECT h.feature_index AS fi, h.match_key AS hk, o.rid, o.fid,
                          h.geom_hash AS hgh, h.props_hash AS hph, o.gh AS ogh, o.ph AS oph
                   FROM pg_temp.geoingest_version h FULL JOIN pg_temp.geoingest_match_old o ON o.k = h.match_key),
             w AS (INSERT INTO pg_temp.geoingest_match_rest
                   SELECT * FROM j
                   WHERE j.fi IS NULL OR j.rid IS NULL OR j.hgh IS DISTINCT FROM j.ogh OR j.hph IS DISTINCT FROM j.oph)
        SELECT count(*) INTO kept FROM j
        WHERE j.fi IS NOT NULL AND j.rid IS NOT NULL AND NOT j.hgh IS DISTINCT FROM j.ogh AND NOT j.hph IS DISTINCT FROM j.oph;
        IF kept + (SELECT count(*) FROM pg_temp.geoingest_match_rest r WHERE r.fi IS NOT NULL) = total
           AND kept + (SELECT count(*) FROM pg_temp.geoingest_match_rest r WHERE r.rid IS NOT NULL) = nold THEN
            INSERT INTO pg_temp.geoingest_match_dupk
            SELECT r.hk, count(*) FROM pg_temp.geoingest_match_rest r
            WHERE r.rid IS NULL AND r.hk IS NOT NULL AND r.hk <> sig GROUP BY r.hk HAVING count(*) > 1;
        ELSE
            -- A key repeats on one side and is found on the other: the
            -- keys that repeat are found first, by an aggregate of a
            -- 64-bit hash of each key, then counted exactly, by their
            -- text, among the rows whose hash repeats; the old rows'
            -- are left out of the join, as are the new rows'.
            TRUNCATE pg_temp.geoingest_match_rest;
            CREATE TEMP TABLE geoingest_match_dupc ON COMMIT DROP AS
            SELECT hashtextextended(d.k, 0) AS kh FROM pg_temp.geoingest_match_old d
            WHERE d.k IS NOT NULL GROUP BY 1 HAVING count(*) > 1;
            IF EXISTS (SELECT FROM pg_temp.geoingest_match_dupc) THEN
                UPDATE pg_temp.geoingest_match_old o SET k = NULL
                WHERE o.k IN (SELECT d.k FROM pg_temp.geoingest_match_old d
                              WHERE hashtextextended(d.k, 0) IN (SELECT c.kh FROM pg_temp.geoingest_match_dupc c)
                              GROUP BY d.k HAVING count(*) > 1);
            END IF;
            TRUNCATE pg_temp.geoingest_match_dupc;
            INSERT INTO pg_temp.geoingest_match_dupc
            SELECT hashtextextended(h.match_key, 0) FROM pg_temp.geoingest_version h
            WHERE h.match_key IS NOT NULL AND h.match_key <> sig GROUP BY 1 HAVING count(*) > 1;
            IF EXISTS (SELECT FROM pg_temp.geoingest_match_dupc) THEN
                INSERT INTO pg_temp.geoingest_match_dupk
                SELECT h.match_key, count(*) FROM pg_temp.geoingest_version h
                WHERE h.match_key IS NOT NULL AND h.match_key <> sig
                  AND hashtextextended(h.match_key, 0) IN (SELECT c.kh FROM pg_temp.geoingest_match_dupc c)
                GROUP BY h.match_key HAVING count(*) > 1;
            END IF;
            ANALYZE pg_temp.geoingest_match_dupk;
            INSERT INTO pg_temp.geoingest_match_rest
            SELECT h.fi, h.k, o.rid, o.fid, h.gh, h.ph, o.gh, o.ph
            FROM (SELECT v.feature_index AS fi, v.geom_hash AS gh, v.props_hash AS ph,
                         CASE WHEN EXISTS (SELECT FROM pg_temp.geoingest_match_dupk d WHERE d.k = v.match_key)
                              THEN NULL ELSE v.match_key END AS k
                  FROM pg_temp.geoingest_version v) h
            FULL JOIN pg_temp.geoingest_match_old o ON o.k = h.k
            WHERE h.fi IS NULL OR o.rid IS NULL OR h.gh IS DISTINCT FROM o.gh OR h.ph IS DISTINCT FROM o.ph;
            kept := total - (SELECT count(*) FROM pg_temp.geoingest_match_rest r WHERE r.fi IS NOT NULL);
        END IF;
        SELECT coalesce(sum(d.n), 0) INTO duplicate_keys FROM pg_temp.geoingest_match_dupk d;
        INSERT INTO pg_temp.geoingest_match_pairs
        SELECT r.fi, r.rid, r.fid, 'key', r.hgh IS DISTINCT FROM r.ogh, r.hph IS DISTINCT FROM r.oph
        FROM pg_temp.geoingest_match_rest r WHERE r.fi IS NOT NULL AND r.rid IS NOT NULL;

        -- 2. Identical content, paired in order among equals, among the
        -- rows the key left.
        IF EXISTS (SELECT FROM pg_temp.geoingest_match_rest r WHERE r.rid IS NULL)
           AND EXISTS (SELECT FROM pg_temp.geoingest_match_rest r WHERE r.fi IS NULL) THEN
        INSERT INTO pg_temp.geoingest_match_pairs
        WITH n AS (SELECT r.fi, r.hgh AS gh, r.hph AS ph,
                          row_number() OVER (PARTITION BY r.hgh, r.hph ORDER BY r.fi) AS i
                   FROM pg_temp.geoingest_match_rest r WHERE r.rid IS NULL),
             o AS (SELECT r.rid, r.fid, r.ogh AS gh, r.oph AS ph,
                          row_number() OVER (PARTITION BY r.ogh, r.oph ORDER BY r.fid) AS i
                   FROM pg_temp.geoingest_match_rest r WHERE r.fi IS NULL)
        SELECT n.fi, o.rid, o.fid, 'content', false, false FROM n JOIN o USING (gh, ph, i);
        END IF;
        ANALYZE pg_temp.geoingest_match_pairs;
        INSERT INTO pg_temp.geoingest_match_added
        SELECT r.fi FROM pg_temp.geoingest_match_rest r
        WHERE r.rid IS NULL AND NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.fi = r.fi);
        INSERT INTO pg_temp.geoingest_match_removed
        SELECT r.rid, r.fid FROM pg_temp.geoingest_match_rest r
        WHERE r.fi IS NULL AND NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.rid = r.rid);
    ELSE
        -- 2. Identical content, paired in order among equals.
        IF total > 0 AND nold > 0 THEN
        INSERT INTO pg_temp.geoingest_match_pairs
        WITH n AS (SELECT h.feature_index AS fi, h.geom_hash AS gh, h.props_hash AS ph,
                          row_number() OVER (PARTITION BY h.geom_hash, h.props_hash ORDER BY h.feature_index) AS i
                   FROM pg_temp.geoingest_version h),
             o AS (SELECT m.rid, m.fid, m.gh, m.ph, row_number() OVER (PARTITION BY m.gh, m.ph ORDER BY m.fid) AS i
                   FROM pg_temp.geoingest_match_old m)
        SELECT n.fi, o.rid, o.fid, 'content', false, false FROM n JOIN o USING (gh, ph, i);
        SELECT count(*) INTO npairs FROM pg_temp.geoingest_match_pairs;
        END IF;
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
    END IF;
    -- The pairs left out of the match are unchanged key pairs.
    INSERT INTO pg_temp.geoingest_match_kept VALUES (kept + nbypass);
    total := total + nbypass;

    -- What is left to do, in small tables: the changed pairs, the new
    -- rows and the old rows still unmatched (the overlap rule's, then added
    -- and removed).
    CREATE TEMP TABLE geoingest_match_changed ON COMMIT DROP AS
    SELECT * FROM pg_temp.geoingest_match_pairs p WHERE p.gchg OR p.pchg;
    ANALYZE pg_temp.geoingest_match_changed;
    ANALYZE pg_temp.geoingest_match_added;
    ANALYZE pg_temp.geoingest_match_removed;
    SELECT (SELECT count(*) FROM pg_temp.geoingest_match_changed) + (SELECT count(*) FROM pg_temp.geoingest_match_added)
    INTO to_write;
END
$function$;
