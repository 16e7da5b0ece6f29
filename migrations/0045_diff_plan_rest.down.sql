-- Undoes 0045: the diff's match is 0044's again (every key pair stored, the
-- duplicate keys found by an aggregate of the keys' text).

CREATE OR REPLACE FUNCTION public.geoingest_diff_plan(target text, old_ref bigint, key_fields text[], OUT total bigint, OUT to_write bigint, OUT duplicate_keys bigint)
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
                           CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                                ELSE geoingest_geom_hash(o.geom) END AS gh,
                           CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                                ELSE geoingest_props_hash(o.properties) END AS ph
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

CREATE OR REPLACE FUNCTION public.geoingest_diff_changes(job_id text, ot text, inc text, min_iou double precision, INOUT r job_changes)
 RETURNS job_changes
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.geoingest_diff_rewrite_list()
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
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
$function$;

