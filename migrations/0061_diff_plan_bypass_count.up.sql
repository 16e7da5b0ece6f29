-- geoingest schema, version 61: a diff's plan does not count the bypass
-- pairs again (docs/design.md, "Versions as changes").
--
-- geoingest_diff_plan, for a prefiltered keyed version, put back the
-- bypass pairs whose key the version lists, then counted the table of
-- bypass pairs: 0.10 s at 1M with 1 % changed (auto_explain). The
-- prefilter left geoingest_bypass_n.n of them (0050, 0060), and the plan
-- counts those it deletes as it puts them back: the count is their
-- difference.

-- geoingest_diff_plan: as in 0045-0051, with the bypass pairs left
-- counted by difference.
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
    back    bigint;
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
                                       RETURNING b.fi, b.rid),
                                 i AS (INSERT INTO pg_temp.geoingest_kept_back
                                       SELECT d.fi, d.rid, coalesce(o.feature_id, o.id), o.match_key, o.geom_hash, o.props_hash, o.area_m2
                                       FROM d JOIN %s o ON o.ctid = d.rid
                                       WHERE o.job_ref = $1)
                            SELECT count(*) FROM d', ot) INTO back USING old_ref, sig;
            IF EXISTS (SELECT FROM pg_temp.geoingest_kept_back) THEN
                INSERT INTO pg_temp.geoingest_kept SELECT * FROM pg_temp.geoingest_kept_back;
                INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
                SELECT b.fi, b.match_key, b.geom_hash, b.props_hash, b.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept_back b;
                -- A bypass pair's row is no other pair's.
                INSERT INTO pg_temp.geoingest_match_old (rid, fid, k, gh, ph)
                SELECT b.rid, b.fid, b.match_key, b.geom_hash, b.props_hash FROM pg_temp.geoingest_kept_back b;
            END IF;
            -- The bypass pairs left: as many as the prefilter left
            -- (geoingest_bypass_n) but those put back, without a count of
            -- the table.
            SELECT b.n - back INTO nbypass FROM pg_temp.geoingest_bypass_n b;
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

