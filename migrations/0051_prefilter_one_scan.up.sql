-- geoingest schema, version 51: the raw-bytes prefilter reads the old
-- generation once (docs/design.md, "Versions as changes").
--
-- With 0050 a keyed source's version with few changes cost the server
-- three passes over a million rows besides its own: the raw join wrote a
-- wide row for every kept feature (pg_temp.geoingest_kept), the match read
-- the whole old generation again to leave the kept pairs out of its old
-- side (geoingest_match_old, an anti-join against them), and the kept
-- keys' check probed every kept key against both sides and grouped them
-- by a hash of their text. Now geoingest_prefilter_match joins the old
-- generation with the version's raw hashes once (a FULL JOIN) and sorts
-- what it finds, in that one pass, into:
--
--   geoingest_match_old   the old rows not kept, in the match's shape;
--   geoingest_kept        the kept pairs that do not stand for themselves
--                         (no key, or a key found more than once), whole;
--                         their rows join geoingest_match_old (each once);
--   geoingest_bypass      the kept pairs whose row has a key, narrow: the
--                         feature, the row and a 64-bit hash of the key;
--   geoingest_unkept      the features not kept (the write gate's reader
--                         skips all it sent but these, when they are fewer).
--
-- A bypass pair is the key's unchanged pair when its key is found once
-- among the old rows and once in the version. The old side, and repeats
-- among the pairs (bytes repeated in the file, rows repeated among the
-- rows), are checked at once: the key hashes of the pairs and of the old
-- rows left in the match, grouped; a hash found twice puts its pairs back
-- (into geoingest_kept, from their rows). The version's parsed features
-- are checked by geoingest_diff_plan once they are listed: a pair whose
-- key hash is one of theirs is put back. A collision of the 64-bit hash
-- only ever puts a pair back, never leaves one out.

CREATE OR REPLACE FUNCTION geoingest_prefilter_create()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_raw, pg_temp.geoingest_kept, pg_temp.geoingest_bypass,
                         pg_temp.geoingest_unkept, pg_temp.geoingest_bypass_n;
    CREATE TEMP TABLE geoingest_raw (fi bigint, raw bigint) ON COMMIT DROP;
END
$function$;

-- geoingest_prefilter_match: total is how many raw hashes were copied,
-- kept how many of those features were found among the rows.
CREATE OR REPLACE FUNCTION geoingest_prefilter_match(target text, old_ref bigint, key_fields text[], OUT total bigint, OUT kept bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '256MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot      text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed   boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    sig     text := key_fields::text || ':';
    kx      text := 'NULL::text';
    npairs  bigint;
    nunkept bigint;
    nbypass bigint;
    barea   double precision;
    moved   bigint := 0;
    marea   double precision := 0;
BEGIN
    IF keyed THEN
        -- As geoingest_diff_plan computes an old row's key.
        kx := format('nullif(CASE WHEN starts_with(o.match_key, $2) THEN o.match_key ELSE $2 || %s END, $2)',
                     geoingest_match_key_expr(key_fields, 'o.properties', 3));
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_kept, pg_temp.geoingest_bypass, pg_temp.geoingest_unkept,
                         pg_temp.geoingest_bypass_n, pg_temp.geoingest_bypass_rep, pg_temp.geoingest_match_old,
                         pg_temp.geoingest_match_old_of;
    CREATE TEMP TABLE geoingest_kept (fi bigint, rid tid, fid bigint, match_key text, geom_hash uuid, props_hash uuid,
                                      area_m2 double precision) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_bypass (fi bigint, rid tid, kh bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_unkept (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_bypass_n (n bigint, area_m2 double precision) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_old (rid tid, fid bigint, k text, gh uuid, ph uuid) ON COMMIT DROP;
    ANALYZE pg_temp.geoingest_raw;
    -- One pass: each old row with the features of its raw hash (a row is
    -- taken only when the writer would give the feature its very match
    -- columns: hashes in the current form and, keyed, its key under the
    -- same fields), each feature with none once. c: 0 an old row not
    -- kept, 1 a kept pair in the match, 2 a bypass pair, 3 a feature not
    -- kept. Only what each needs is kept of it.
    EXECUTE format('
        WITH o AS (SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, o.match_key, %2$s AS k,
                          CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                               ELSE geoingest_geom_hash(o.geom) END AS gh,
                          CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                               ELSE geoingest_props_hash(o.properties) END AS ph,
                          o.area_m2,
                          CASE WHEN o.geom_hash < geoingest_hash_form_end() AND o.props_hash < geoingest_hash_form_end()
                                    AND (NOT $4 OR starts_with(o.match_key, $2)) THEN o.raw_hash END AS rh,
                          $4 AND o.match_key IS NOT NULL AND o.match_key <> $2 AS byp
                   FROM %1$s o WHERE o.job_ref = $1),
             j AS (SELECT r.fi, o.rid,
                          CASE WHEN r.fi IS NULL THEN 0 WHEN o.rid IS NULL THEN 3 WHEN o.byp THEN 2 ELSE 1 END AS c,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.fid END AS fid,
                          CASE WHEN r.fi IS NULL THEN o.k WHEN NOT o.byp THEN o.match_key END AS k,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.gh END AS gh,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.ph END AS ph,
                          CASE WHEN r.fi IS NOT NULL AND o.byp THEN hashtextextended(o.match_key, 0) END AS kh,
                          CASE WHEN r.fi IS NOT NULL THEN o.area_m2 END AS area
                   FROM o FULL JOIN pg_temp.geoingest_raw r ON r.raw = o.rh),
             a AS (INSERT INTO pg_temp.geoingest_match_old SELECT j.rid, j.fid, j.k, j.gh, j.ph FROM j WHERE j.c = 0),
             b AS (INSERT INTO pg_temp.geoingest_kept SELECT j.fi, j.rid, j.fid, j.k, j.gh, j.ph, j.area FROM j WHERE j.c = 1),
             d AS (INSERT INTO pg_temp.geoingest_bypass SELECT j.fi, j.rid, j.kh FROM j WHERE j.c = 2),
             e AS (INSERT INTO pg_temp.geoingest_unkept SELECT j.fi FROM j WHERE j.c = 3)
        SELECT count(*) FILTER (WHERE j.c = 3), count(*) FILTER (WHERE j.c IN (1, 2)),
               count(*) FILTER (WHERE j.c = 2), coalesce(sum(j.area) FILTER (WHERE j.c = 2), 0)
        FROM j', ot, kx) INTO nunkept, npairs, nbypass, barea USING old_ref, sig, key_fields, keyed;
    SELECT count(*) INTO total FROM pg_temp.geoingest_raw;
    kept := total - nunkept;
    IF nbypass > 0 THEN
        -- The keys found more than once among the bypass pairs and the old
        -- rows left in the match (by a 64-bit hash: a collision only puts
        -- a pair back): their pairs go back into the match, from their rows.
        CREATE TEMP TABLE geoingest_bypass_rep ON COMMIT DROP AS
        SELECT x.kh FROM (SELECT b.kh FROM pg_temp.geoingest_bypass b
                          UNION ALL
                          SELECT hashtextextended(m.k, 0) FROM pg_temp.geoingest_match_old m WHERE m.k IS NOT NULL) x
        GROUP BY x.kh HAVING count(*) > 1;
        IF EXISTS (SELECT FROM pg_temp.geoingest_bypass_rep) THEN
            EXECUTE format('WITH d AS (DELETE FROM pg_temp.geoingest_bypass b
                                       WHERE b.kh IN (SELECT r.kh FROM pg_temp.geoingest_bypass_rep r)
                                       RETURNING b.fi, b.rid),
                                 i AS (INSERT INTO pg_temp.geoingest_kept
                                       SELECT d.fi, d.rid, coalesce(o.feature_id, o.id), o.match_key, o.geom_hash, o.props_hash, o.area_m2
                                       FROM d JOIN %s o ON o.ctid = d.rid
                                       WHERE o.job_ref = $1
                                       RETURNING area_m2)
                            SELECT count(*), coalesce(sum(i.area_m2), 0) FROM i', ot) INTO moved, marea USING old_ref;
        END IF;
    END IF;
    INSERT INTO pg_temp.geoingest_bypass_n VALUES (nbypass - moved, barea - marea);
    -- The kept pairs' rows in the match, each once (bytes repeated in the
    -- file pair one row with several features), with the key the match
    -- computes for them (none where the row's key is the empty one).
    INSERT INTO pg_temp.geoingest_match_old (rid, fid, k, gh, ph)
    SELECT DISTINCT k.rid, k.fid, CASE WHEN keyed THEN nullif(k.match_key, sig) END, k.geom_hash, k.props_hash
    FROM pg_temp.geoingest_kept k;
    IF npairs = 0 THEN
        -- Nothing kept: the version is read whole (prefilter.go), and the
        -- match's old side is every row, as listed here; the match takes
        -- it rather than read the generation again.
        CREATE TEMP TABLE geoingest_match_old_of ON COMMIT DROP AS SELECT old_ref AS old_ref, coalesce(key_fields, '{}') AS key_fields;
    END IF;
    IF npairs > kept THEN
        -- A feature's bytes are several rows' (of one content, so never a
        -- bypass pair: their key repeats): one of them stands for it.
        DELETE FROM pg_temp.geoingest_kept k
        WHERE k.ctid NOT IN (SELECT min(d.ctid) FROM pg_temp.geoingest_kept d GROUP BY d.fi);
    END IF;
END
$function$;

-- geoingest_prefilter_kept lists the kept features' indexes.
CREATE OR REPLACE FUNCTION geoingest_prefilter_kept()
 RETURNS SETOF bigint
 LANGUAGE plpgsql
AS $function$
BEGIN
    RETURN QUERY SELECT k.fi FROM pg_temp.geoingest_kept k UNION ALL SELECT b.fi FROM pg_temp.geoingest_bypass b;
END
$function$;

-- geoingest_prefilter_unkept lists the indexes of the features whose raw
-- hash was copied and not kept (the write gate's reader skips all it sent
-- but these).
CREATE OR REPLACE FUNCTION geoingest_prefilter_unkept()
 RETURNS SETOF bigint
 LANGUAGE plpgsql
AS $function$
BEGIN
    RETURN QUERY SELECT u.fi FROM pg_temp.geoingest_unkept u;
END
$function$;

DROP FUNCTION geoingest_prefilter_dedupe();

-- geoingest_prefilter_keep lists the kept features that do not stand for
-- themselves in the version's match columns; it returns the count, area
-- and extent of every kept feature, and the count and area of those left
-- out of the version. The extent is found from the edges of the
-- generation's (base_box, its version's as recorded) where it can be.
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
    SELECT k.fi, k.match_key, k.geom_hash, k.props_hash, k.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept k;
    GET DIAGNOSTICS kept = ROW_COUNT;
    SELECT b.n, b.area_m2 INTO bypassed, bypassed_area FROM pg_temp.geoingest_bypass_n b;
    SELECT kept + bypassed, coalesce(sum(k.area_m2), 0) + bypassed_area INTO kept, area_m2 FROM pg_temp.geoingest_kept k;
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
                 FROM (SELECT k.rid FROM pg_temp.geoingest_kept k UNION ALL SELECT b.rid FROM pg_temp.geoingest_bypass b) k
                 JOIN pg_temp.geoingest_kept_edge e ON e.rid = k.rid LOOP
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
                    FROM (SELECT o.geom::box3d AS b
                          FROM (SELECT k.rid FROM pg_temp.geoingest_kept k UNION ALL SELECT b.rid FROM pg_temp.geoingest_bypass b) k
                          JOIN %s o ON o.ctid = k.rid
                          WHERE o.job_ref = $1) x', ot)
    INTO min_x, min_y, max_x, max_y USING old_ref;
END
$function$;

-- geoingest_prefilter_send copies kept features from their rows into
-- pg_temp.geoingest_incoming, under old_ref, as the writer would have sent
-- them: with every_one, all that are not there yet (a held version is kept
-- whole, the bypass pairs too), else those the match added or changed
-- (never a bypass pair: those are not in the match).
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
    IF NOT EXISTS (SELECT FROM pg_temp.geoingest_kept) AND NOT EXISTS (SELECT FROM pg_temp.geoingest_bypass) THEN
        RETURN 0;
    END IF;
    -- The match's tables exist only once it ran: each case is its own
    -- statement.
    IF every_one THEN
        EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2,
                                                                 match_key, geom_hash, props_hash, raw_hash)
                        SELECT $1, k.fi, o.layer, o.properties, o.geom, o.area_m2, o.match_key, o.geom_hash, o.props_hash, o.raw_hash
                        FROM (SELECT k.fi, k.rid FROM pg_temp.geoingest_kept k
                              UNION ALL SELECT b.fi, b.rid FROM pg_temp.geoingest_bypass b) k
                        JOIN %s o ON o.ctid = k.rid
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
    listed boolean := false;
BEGIN
    duplicate_keys := 0;
    IF keyed THEN
        -- A stored key under the same fields is taken as it is; any other
        -- is computed.
        kx := format('nullif(CASE WHEN starts_with(o.match_key, $2) THEN o.match_key ELSE $2 || %s END, $2)',
                     geoingest_match_key_expr(key_fields, 'o.properties', 3));
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_match_pairs, pg_temp.geoingest_match_changed,
                         pg_temp.geoingest_match_added, pg_temp.geoingest_match_removed,
                         pg_temp.geoingest_match_dupk, pg_temp.geoingest_match_dupc, pg_temp.geoingest_match_rest,
                         pg_temp.geoingest_match_kept;
    IF skip_kept THEN
        -- The old side was listed by the prefilter's one pass over the
        -- generation (geoingest_prefilter_match): every row but those of
        -- the bypass pairs (0051).
        IF to_regclass('pg_temp.geoingest_match_old') IS NULL OR to_regclass('pg_temp.geoingest_bypass') IS NULL THEN
            RAISE EXCEPTION 'geoingest_diff_plan: skip_kept without the prefilter''s tables';
        END IF;
        IF keyed AND EXISTS (SELECT FROM pg_temp.geoingest_bypass) THEN
            -- A bypass pair is the key's pair when its key is found once in
            -- the version and once among the rows: the rows' side and
            -- repeats among the pairs were checked by the prefilter; a pair
            -- whose key (by a 64-bit hash: a collision only puts a pair
            -- back) is one of the version's listed rows' goes back into the
            -- match, with the match columns its row holds, the ones the
            -- writer would have given it.
            DROP TABLE IF EXISTS pg_temp.geoingest_kept_back;
            CREATE TEMP TABLE geoingest_kept_back (fi bigint, rid tid, fid bigint, match_key text, geom_hash uuid,
                                                   props_hash uuid, area_m2 double precision) ON COMMIT DROP;
            EXECUTE format('WITH d AS (DELETE FROM pg_temp.geoingest_bypass b
                                       WHERE b.kh IN (SELECT hashtextextended(v.match_key, 0) FROM pg_temp.geoingest_version v
                                                      WHERE v.match_key IS NOT NULL AND v.match_key <> $2)
                                       RETURNING b.fi, b.rid)
                            INSERT INTO pg_temp.geoingest_kept_back
                            SELECT d.fi, d.rid, coalesce(o.feature_id, o.id), o.match_key, o.geom_hash, o.props_hash, o.area_m2
                            FROM d JOIN %s o ON o.ctid = d.rid
                            WHERE o.job_ref = $1', ot) USING old_ref, sig;
            IF EXISTS (SELECT FROM pg_temp.geoingest_kept_back) THEN
                INSERT INTO pg_temp.geoingest_kept SELECT * FROM pg_temp.geoingest_kept_back;
                INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
                SELECT b.fi, b.match_key, b.geom_hash, b.props_hash, b.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept_back b;
                -- A bypass pair's row is no other pair's.
                INSERT INTO pg_temp.geoingest_match_old (rid, fid, k, gh, ph)
                SELECT b.rid, b.fid, b.match_key, b.geom_hash, b.props_hash FROM pg_temp.geoingest_kept_back b;
            END IF;
            SELECT count(*) INTO nbypass FROM pg_temp.geoingest_bypass;
        END IF;
    ELSE
        IF to_regclass('pg_temp.geoingest_match_old_of') IS NOT NULL THEN
            -- The prefilter kept nothing and listed every row of the
            -- generation as the match lists it (0051): taken as it is, once.
            EXECUTE 'SELECT EXISTS (SELECT FROM pg_temp.geoingest_match_old_of m WHERE m.old_ref = $1 AND m.key_fields = $2)'
            INTO listed USING old_ref, coalesce(key_fields, '{}');
            DROP TABLE pg_temp.geoingest_match_old_of;
        END IF;
    END IF;
    IF NOT skip_kept AND NOT listed THEN
        DROP TABLE IF EXISTS pg_temp.geoingest_match_old;
        EXECUTE format('CREATE TEMP TABLE geoingest_match_old ON COMMIT DROP AS
                        SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, %s AS k,
                               CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                                    ELSE geoingest_geom_hash(o.geom) END AS gh,
                               CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                                    ELSE geoingest_props_hash(o.properties) END AS ph
                        FROM %s o WHERE o.job_ref = $1', kx, ot) USING old_ref, sig, key_fields;
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

