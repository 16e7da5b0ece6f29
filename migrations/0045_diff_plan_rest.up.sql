-- geoingest schema, version 45: a version's match stores only what is not
-- an unchanged pair (docs/design.md, "Versions as changes").
--
-- Measured at 1M keyed parcels with 1 % changed (auto_explain, nested
-- statements), geoingest_diff_plan took some 5.4 s of the server's 6.3:
-- an aggregate of the old keys' text to find the duplicates (1.0 s, in 5
-- batches on disk), one of the new keys' text (1.0 s), and the key join
-- storing one row per pair in geoingest_match_pairs (2.0-2.2 s), a
-- million of them to find ten thousand changes. Now:
--
-- * the key join is one FULL JOIN that stores only the changed pairs and
--   the rows of either side it left (geoingest_match_rest), and counts the
--   unchanged pairs (geoingest_match_kept); the content rule then runs on
--   those rows only;
-- * no aggregate of the keys runs first where none is needed: where the
--   unchanged pairs plus the stored rows account for every row of each
--   side exactly once, no key that repeats on one side is found on the
--   other, so the join paired exactly what the key's rule pairs, and the
--   repeated keys of the version are counted among the rows it left.
--   Otherwise (a placeholder key in both versions) the repeated keys are
--   found first, by an aggregate of a 64-bit hash of each key
--   (hashtextextended) and then exactly, by their text, among the rows
--   whose hash repeats, and the join runs again without them;
-- * geoingest_diff_changes adds that count to by_key and unchanged, and
--   geoingest_diff_rewrite_list, the one reader of every pair (a version
--   written whole into its own table gives each row its feature id),
--   stores the unchanged pairs first, with the same join.
--
-- A source without a key is matched as before. The pairs, changes, feature
-- ids and counts are the same as 0044's (the oracle,
-- TestDiffChainsEqualAFullLoad and FuzzDiffChains, runs every path).

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
    kept   bigint := 0;
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
    EXECUTE format('CREATE TEMP TABLE geoingest_match_old ON COMMIT DROP AS
                    SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, %s AS k,
                           CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                                ELSE geoingest_geom_hash(o.geom) END AS gh,
                           CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                                ELSE geoingest_props_hash(o.properties) END AS ph
                    FROM %s o WHERE o.job_ref = $1', kx, ot) USING old_ref, sig, key_fields;
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
    INSERT INTO pg_temp.geoingest_match_kept VALUES (kept);

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

CREATE OR REPLACE FUNCTION geoingest_diff_changes(job_id text, ot text, inc text, min_iou double precision, INOUT r job_changes)
 RETURNS job_changes
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    npairs bigint;
    kept   bigint;
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
    -- The unchanged key pairs that geoingest_diff_plan counted and did not
    -- store (0045).
    SELECT coalesce(sum(k.n), 0) INTO kept FROM pg_temp.geoingest_match_kept k;
    npairs := npairs + kept;
    r.by_key := r.by_key + kept;
    r.unchanged := npairs - (SELECT count(*) FROM pg_temp.geoingest_match_changed);
    r.added := (SELECT count(*) FROM pg_temp.geoingest_match_added);
    r.removed := (SELECT count(*) FROM pg_temp.geoingest_match_removed);
    SELECT ST_Extent(e)::geometry INTO r.bbox
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_changes.job_id
          UNION ALL SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_changes.job_id) x(e);

END
$function$;

CREATE OR REPLACE FUNCTION geoingest_diff_rewrite_list()
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    n bigint;
BEGIN
    -- Every row written here needs the feature id the match gave it: the
    -- unchanged key pairs, which geoingest_diff_plan only counted, are
    -- stored now (the same join, the same keys left out).
    IF EXISTS (SELECT FROM pg_temp.geoingest_match_kept k WHERE k.n > 0) THEN
        INSERT INTO pg_temp.geoingest_match_pairs
        SELECT h.feature_index, o.rid, o.fid, 'key', false, false
        FROM pg_temp.geoingest_version h JOIN pg_temp.geoingest_match_old o ON o.k = h.match_key
        WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_dupk d WHERE d.k = h.match_key)
          AND NOT h.geom_hash IS DISTINCT FROM o.gh AND NOT h.props_hash IS DISTINCT FROM o.ph;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n <> (SELECT sum(k.n) FROM pg_temp.geoingest_match_kept k) THEN
            RAISE EXCEPTION 'geoingest_diff_rewrite_list: % unchanged key pairs, the plan counted %',
                n, (SELECT sum(k.n) FROM pg_temp.geoingest_match_kept k);
        END IF;
        UPDATE pg_temp.geoingest_match_kept SET n = 0;
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_rewrite;
    CREATE TEMP TABLE geoingest_rewrite ON COMMIT DROP AS
    SELECT h.spool_off, h.spool_len, p.fid
    FROM pg_temp.geoingest_version h LEFT JOIN pg_temp.geoingest_match_pairs p ON p.fi = h.feature_index
    WHERE NOT h.must AND h.spool_off IS NOT NULL
    ORDER BY h.spool_off;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
