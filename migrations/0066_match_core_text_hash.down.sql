-- Undoes 0066: the full replace hashes properties with jsonb_hash_extended again.
CREATE OR REPLACE FUNCTION geoingest_match_core(job_id text, base_job_id text, target text, nt regclass, new_ref bigint, ot regclass, old_ref bigint, key_fields text[], min_iou double precision, apply boolean)
 RETURNS job_changes
 LANGUAGE plpgsql
AS $function$
DECLARE
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    kx   text := 'NULL::text';
    rest boolean;
    r    job_changes;
    nchanged bigint;
BEGIN
    -- The key's expression: one inlined geoingest_key_part per field
    -- ($3[1], $3[2], ...: only the count of fields is written into it).
    IF keyed THEN
        SELECT 'geoingest_key_of(ARRAY[' || string_agg(format('geoingest_key_part(properties, $3[%s])', i), ', ' ORDER BY i) || '])'
        INTO kx FROM generate_series(1, cardinality(key_fields)) i;
    END IF;
    SELECT geoingest_match_core.job_id, target, j.source_bucket, j.source_key, nullif(base_job_id, '')
    INTO r.job_id, r.target_table, r.source_bucket, r.source_key, r.base_job_id
    FROM jobs j WHERE j.job_id = geoingest_match_core.job_id;
    r.added := 0; r.removed := 0; r.geometry := 0; r.attributes := 0; r.unchanged := 0;
    r.by_key := 0; r.by_content := 0; r.by_overlap := 0; r.duplicate_keys := 0; r.lineage := 0;
    r.recorded_at := now();
    r.xid := pg_current_xact_id();

    IF ot IS NULL THEN
        -- A source's first version: every feature is added, and recorded
        -- by its counts and extent only.
        EXECUTE format('SELECT count(*), ST_Extent(geom)::geometry FROM %s WHERE job_ref = $1', nt)
            INTO r.added, r.bbox USING new_ref;
        INSERT INTO job_changes VALUES (r.*);
        RETURN r;
    END IF;

    DROP TABLE IF EXISTS pg_temp.geoingest_match_new, pg_temp.geoingest_match_old;
    CREATE TEMP TABLE geoingest_match_new (rid tid, id bigint, k text, gh uuid, ph bigint,
                                           old_rid tid, old_fid bigint, how text) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_old (rid tid, fid bigint, k text, gh uuid, ph bigint,
                                           taken boolean NOT NULL DEFAULT false,
                                           changed boolean NOT NULL DEFAULT false) ON COMMIT DROP;
    EXECUTE format('INSERT INTO geoingest_match_new (rid, id, k, gh, ph)
                    SELECT ctid, id, %s, md5(ST_AsEWKB(geom))::uuid, jsonb_hash_extended(properties, 0)
                    FROM %s WHERE job_ref = $1', kx, nt) USING new_ref, keyed, key_fields;
    EXECUTE format('INSERT INTO geoingest_match_old (rid, fid, k, gh, ph)
                    SELECT ctid, coalesce(feature_id, id), %s, md5(ST_AsEWKB(geom))::uuid, jsonb_hash_extended(properties, 0)
                    FROM %s WHERE job_ref = $1', kx, ot) USING old_ref, keyed, key_fields;
    ANALYZE geoingest_match_new;
    ANALYZE geoingest_match_old;

    -- 1. The key, where unique on both sides.
    IF keyed THEN
        WITH d AS (SELECT k FROM geoingest_match_new WHERE k IS NOT NULL GROUP BY k HAVING count(*) > 1)
        UPDATE geoingest_match_new n SET k = NULL FROM d WHERE n.k = d.k;
        GET DIAGNOSTICS r.duplicate_keys = ROW_COUNT;
        WITH d AS (SELECT k FROM geoingest_match_old WHERE k IS NOT NULL GROUP BY k HAVING count(*) > 1)
        UPDATE geoingest_match_old o SET k = NULL FROM d WHERE o.k = d.k;
        UPDATE geoingest_match_new n SET old_rid = o.rid, old_fid = o.fid, how = 'key'
        FROM geoingest_match_old o WHERE n.k = o.k;
        UPDATE geoingest_match_old o SET taken = true
        FROM geoingest_match_new n WHERE n.how = 'key' AND n.old_rid = o.rid;
    END IF;

    -- 2. Identical content, paired in order among equals.
    WITH n AS (SELECT rid, gh, ph, row_number() OVER (PARTITION BY gh, ph ORDER BY id) AS i
               FROM geoingest_match_new WHERE how IS NULL),
         o AS (SELECT rid, fid, gh, ph, row_number() OVER (PARTITION BY gh, ph ORDER BY fid) AS i
               FROM geoingest_match_old WHERE NOT taken),
         p AS (SELECT n.rid AS nrid, o.rid AS orid, o.fid FROM n JOIN o USING (gh, ph, i))
    UPDATE geoingest_match_new m SET old_rid = p.orid, old_fid = p.fid, how = 'content'
    FROM p WHERE m.rid = p.nrid;
    UPDATE geoingest_match_old o SET taken = true
    FROM geoingest_match_new n WHERE n.how = 'content' AND n.old_rid = o.rid;

    -- 3. Overlap, mutual best among the rest. IoU <= min(area)/max(area):
    -- pairs whose areas alone rule the threshold out are not intersected.
    -- Skipped (with the lineage) when a side has nothing left: reading the
    -- geometries of the rest costs a scan of both relations.
    rest := EXISTS (SELECT FROM geoingest_match_new WHERE how IS NULL)
            AND EXISTS (SELECT FROM geoingest_match_old WHERE NOT taken);
    IF rest THEN
    EXECUTE format('WITH n AS (SELECT m.rid, t.geom FROM geoingest_match_new m JOIN %s t ON t.ctid = m.rid WHERE m.how IS NULL),
                         o AS (SELECT m.rid, m.fid, t.geom FROM geoingest_match_old m JOIN %s t ON t.ctid = m.rid WHERE NOT m.taken),
                         p AS (SELECT n.rid AS nrid, o.rid AS orid, o.fid, ST_Area(n.geom) AS na, ST_Area(o.geom) AS oa,
                                      ST_Area(ST_Intersection(n.geom, o.geom)) AS ia
                               FROM n JOIN o ON n.geom && o.geom
                               WHERE least(ST_Area(n.geom), ST_Area(o.geom)) >= $1 * greatest(ST_Area(n.geom), ST_Area(o.geom))
                                 AND ST_Intersects(n.geom, o.geom)),
                         c AS (SELECT nrid, orid, fid, ia / nullif(na + oa - ia, 0) AS iou FROM p),
                         bn AS (SELECT DISTINCT ON (nrid) nrid, orid, fid, iou FROM c WHERE iou >= $1 ORDER BY nrid, iou DESC, fid),
                         bo AS (SELECT DISTINCT ON (orid) nrid, orid FROM c WHERE iou >= $1 ORDER BY orid, iou DESC, nrid)
                    UPDATE geoingest_match_new m SET old_rid = bn.orid, old_fid = bn.fid, how = ''overlap''
                    FROM bn JOIN bo USING (nrid, orid) WHERE m.rid = bn.nrid', nt, ot) USING min_iou;
    UPDATE geoingest_match_old o SET taken = true
    FROM geoingest_match_new n WHERE n.how = 'overlap' AND n.old_rid = o.rid;
    END IF;
    UPDATE geoingest_match_old o SET changed = true
    FROM geoingest_match_new n WHERE n.old_rid = o.rid AND (n.gh <> o.gh OR n.ph <> o.ph);
    -- The changes (before any row moves: the joins find rows by ctid).
    -- A changed pair whose geometry is the same once normalised, or whose
    -- properties are equal as jsonb values, is rewritten but is no change
    -- (as geoingest_diff_changes).
    EXECUTE format('WITH c AS (SELECT m.old_fid, m.how, ot.geom AS tg, nt.geom AS ng, nt.area_m2 - ot.area_m2 AS d,
                                      m.gh <> o.gh AND NOT geoingest_same_geometry(nt.geom, ot.geom, nt.area_m2, ot.area_m2) AS g,
                                      m.ph <> o.ph AND nt.properties IS DISTINCT FROM ot.properties AS a
                               FROM geoingest_match_new m
                               JOIN geoingest_match_old o ON o.rid = m.old_rid
                               JOIN %s nt ON nt.ctid = m.rid
                               JOIN %s ot ON ot.ctid = m.old_rid
                               WHERE o.changed),
                         w AS (INSERT INTO feature_changes (job_id, feature_id, kind, matched_by, old_bbox, new_bbox, area_delta_m2)
                               SELECT $1, c.old_fid,
                                      CASE WHEN c.g AND c.a THEN ''geometry+attributes''
                                           WHEN c.g THEN ''geometry'' ELSE ''attributes'' END,
                                      c.how, ST_Envelope(c.tg), ST_Envelope(c.ng), c.d
                               FROM c WHERE c.g OR c.a
                               RETURNING kind)
                    SELECT count(*) FILTER (WHERE w.kind <> ''attributes''), count(*) FILTER (WHERE w.kind <> ''geometry''), count(*)
                    FROM w', nt, ot) INTO r.geometry, r.attributes, nchanged USING job_id;
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, new_bbox, area_delta_m2)
                    SELECT $1, m.id, ''added'', ST_Envelope(nt.geom), nt.area_m2
                    FROM geoingest_match_new m JOIN %s nt ON nt.ctid = m.rid
                    WHERE m.how IS NULL', nt) USING job_id;
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, old_bbox, area_delta_m2)
                    SELECT $1, o.fid, ''removed'', ST_Envelope(ot.geom), -ot.area_m2
                    FROM geoingest_match_old o JOIN %s ot ON ot.ctid = o.rid
                    WHERE NOT o.taken', ot) USING job_id;
    rest := EXISTS (SELECT FROM geoingest_match_new WHERE how IS NULL)
            AND EXISTS (SELECT FROM geoingest_match_old WHERE NOT taken);
    IF rest THEN
    EXECUTE format('INSERT INTO feature_lineage (job_id, old_feature_id, new_feature_id, shared_m2)
                    SELECT $1, o.fid, n.id, ST_Area(ST_Intersection(nt.geom, ot.geom)::geography)
                    FROM geoingest_match_new n JOIN %s nt ON nt.ctid = n.rid,
                         geoingest_match_old o JOIN %s ot ON ot.ctid = o.rid
                    WHERE n.how IS NULL AND NOT o.taken AND nt.geom && ot.geom
                      AND ST_Area(ST_Intersection(nt.geom, ot.geom)) > 0.01 * least(ST_Area(nt.geom), ST_Area(ot.geom))',
                   nt, ot) USING job_id;
    GET DIAGNOSTICS r.lineage = ROW_COUNT;
    END IF;

    SELECT count(*) FILTER (WHERE m.how IS NULL),
           count(*) FILTER (WHERE m.how IS NOT NULL) - nchanged,
           count(*) FILTER (WHERE m.how = 'key'), count(*) FILTER (WHERE m.how = 'content'),
           count(*) FILTER (WHERE m.how = 'overlap')
    INTO r.added, r.unchanged, r.by_key, r.by_content, r.by_overlap
    FROM geoingest_match_new m;
    SELECT count(*) INTO r.removed FROM geoingest_match_old WHERE NOT taken;
    SELECT ST_Extent(e)::geometry INTO r.bbox
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_match_core.job_id
          UNION ALL SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_match_core.job_id) x(e);
    INSERT INTO job_changes VALUES (r.*);

    IF apply THEN
        -- The old generation's storage becomes the new generation: out
        -- with the removed and changed rows, in with the added and
        -- changed ones. Nothing else is written.
        EXECUTE format('DELETE FROM %s t USING geoingest_match_old o
                        WHERE t.ctid = o.rid AND t.job_ref = $1 AND (NOT o.taken OR o.changed)', ot) USING old_ref;
        EXECUTE format('INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id)
                        SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, m.old_fid
                        FROM geoingest_match_new m
                        JOIN %s i ON i.ctid = m.rid
                        LEFT JOIN geoingest_match_old o ON o.rid = m.old_rid
                        WHERE m.how IS NULL OR o.changed', ot, nt) USING old_ref;
    ELSE
        -- Last, as it moves the rows the joins above found by ctid: the
        -- matched rows take their predecessors' feature ids.
        EXECUTE format('UPDATE %s t SET feature_id = m.old_fid FROM geoingest_match_new m
                        WHERE t.ctid = m.rid AND m.old_fid IS NOT NULL AND t.job_ref = $1', nt) USING new_ref;
    END IF;
    DROP TABLE pg_temp.geoingest_match_new, pg_temp.geoingest_match_old;
    RETURN r;
END
$function$;
