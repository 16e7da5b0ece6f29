-- Undoes 0037: geoingest_drop_job_features as 0016 made it (the history
-- trigger copies each deleted row).
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

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_drop_job_features(text, bigint) SECURITY DEFINER SET search_path = %I, pg_temp',
                   current_schema());
END
$$;

DROP FUNCTION geoingest_diff_apply_direct(text, text, text, bigint, double precision, bigint, bigint);
DROP FUNCTION geoingest_diff_rewrite_page(bigint, integer);
DROP FUNCTION geoingest_diff_rewrite_list();

-- geoingest_diff_apply as 0036 made it.
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
    npairs bigint;
    del    numeric;
    ins    numeric;
    keep   numeric;
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

    -- 3. Overlap, mutual best among the rest (as 0028), when both sides
    -- have some left.
    IF EXISTS (SELECT FROM pg_temp.geoingest_match_added) AND EXISTS (SELECT FROM pg_temp.geoingest_match_removed) THEN
        DROP TABLE IF EXISTS pg_temp.geoingest_match_overlap;
        EXECUTE format('CREATE TEMP TABLE geoingest_match_overlap ON COMMIT DROP AS
                        WITH n AS (SELECT i.feature_index AS fi, i.geom FROM pg_temp.geoingest_match_added a
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = a.fi),
                             o AS (SELECT m.rid, m.fid, t.geom FROM pg_temp.geoingest_match_removed m JOIN %s t ON t.ctid = m.rid),
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
                        JOIN pg_temp.geoingest_incoming i ON i.feature_index = bn.fi
                        JOIN pg_temp.geoingest_match_old m ON m.rid = bn.rid', ot) USING min_iou;
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
                    JOIN pg_temp.geoingest_incoming i ON i.feature_index = p.fi
                    JOIN %s t ON t.ctid = p.rid', ot) USING job_id;
    INSERT INTO feature_changes (job_id, feature_id, kind, new_bbox, area_delta_m2)
    SELECT geoingest_diff_apply.job_id, i.id, 'added', ST_Envelope(i.geom), i.area_m2
    FROM pg_temp.geoingest_match_added a JOIN pg_temp.geoingest_incoming i ON i.feature_index = a.fi;
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, old_bbox, area_delta_m2)
                    SELECT $1, m.fid, ''removed'', ST_Envelope(t.geom), -t.area_m2
                    FROM pg_temp.geoingest_match_removed m JOIN %s t ON t.ctid = m.rid', ot) USING job_id;
    EXECUTE format('INSERT INTO feature_lineage (job_id, old_feature_id, new_feature_id, shared_m2)
                    SELECT $1, m.fid, i.id, ST_Area(ST_Intersection(i.geom, t.geom)::geography)
                    FROM pg_temp.geoingest_match_added a JOIN pg_temp.geoingest_incoming i ON i.feature_index = a.fi,
                         pg_temp.geoingest_match_removed m JOIN %s t ON t.ctid = m.rid
                    WHERE i.geom && t.geom
                      AND ST_Area(ST_Intersection(i.geom, t.geom)) > 0.01 * least(ST_Area(i.geom), ST_Area(t.geom))',
                   ot) USING job_id;
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
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_apply.job_id
          UNION ALL SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_diff_apply.job_id) x(e);

    IF new_ref = old_ref THEN
        -- The old generation's storage becomes the new one.
        EXECUTE format('WITH x AS (SELECT m.rid FROM pg_temp.geoingest_match_removed m
                                   UNION ALL SELECT p.rid FROM pg_temp.geoingest_match_changed p),
                             d AS (DELETE FROM %s t USING x WHERE t.ctid = x.rid AND t.job_ref = $1
                                   RETURNING geoingest_row_hash(t.feature_index, t.properties, t.geom) AS h)
        SELECT coalesce(sum(d.h), 0) FROM d', ot) INTO del USING old_ref;
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
$function$;
;

DROP FUNCTION geoingest_diff_changes(text, text, text, double precision, job_changes);

-- geoingest_diff_plan as 0032 made it.
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
    npairs bigint;
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
                         pg_temp.geoingest_match_added, pg_temp.geoingest_match_removed;
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
        WITH nk AS (SELECT h.feature_index, nullif(h.match_key, sig) AS k, h.geom_hash, h.props_hash
                    FROM pg_temp.geoingest_version h),
             dup AS (SELECT nk.k FROM nk WHERE nk.k IS NOT NULL GROUP BY nk.k HAVING count(*) > 1),
             ins AS (INSERT INTO pg_temp.geoingest_match_pairs
                     SELECT nk.feature_index, o.rid, o.fid, 'key', nk.geom_hash IS DISTINCT FROM o.gh, nk.props_hash IS DISTINCT FROM o.ph
                     FROM nk JOIN pg_temp.geoingest_match_old o ON o.k = nk.k
                     WHERE NOT EXISTS (SELECT FROM dup WHERE dup.k = nk.k))
        SELECT count(*) INTO duplicate_keys FROM nk JOIN dup ON dup.k = nk.k;
    END IF;

    -- 2. Identical content, paired in order among equals.
    INSERT INTO pg_temp.geoingest_match_pairs
    WITH n AS (SELECT h.feature_index AS fi, h.geom_hash AS gh, h.props_hash AS ph,
                      row_number() OVER (PARTITION BY h.geom_hash, h.props_hash ORDER BY h.feature_index) AS i
               FROM pg_temp.geoingest_version h
               WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.fi = h.feature_index)),
         o AS (SELECT m.rid, m.fid, m.gh, m.ph, row_number() OVER (PARTITION BY m.gh, m.ph ORDER BY m.fid) AS i
               FROM pg_temp.geoingest_match_old m
               WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_pairs p WHERE p.rid = m.rid))
    SELECT n.fi, o.rid, o.fid, 'content', false, false FROM n JOIN o USING (gh, ph, i);

    -- What is left to do, in small tables: the changed pairs, the new
    -- rows and the old rows still unmatched (the overlap rule's, then added
    -- and removed).
    CREATE TEMP TABLE geoingest_match_changed ON COMMIT DROP AS
    SELECT * FROM pg_temp.geoingest_match_pairs p WHERE p.gchg OR p.pchg;
    CREATE TEMP TABLE geoingest_match_added (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_removed (rid tid, fid bigint) ON COMMIT DROP;
    SELECT count(*) INTO total FROM pg_temp.geoingest_version;
    SELECT count(*) INTO npairs FROM pg_temp.geoingest_match_pairs;
    SELECT count(*) INTO nold FROM pg_temp.geoingest_match_old;
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
