-- Undoes 0063: a matched geometry or record is changed whenever its EWKB or
-- jsonb text differs, and a full replace hashes properties as jsonb.
CREATE OR REPLACE FUNCTION geoingest_diff_changes(job_id text, ot text, inc text, min_iou double precision, INOUT r job_changes)
 RETURNS job_changes
 LANGUAGE plpgsql
 SET work_mem TO '256MB'
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

CREATE OR REPLACE FUNCTION geoingest_match_core(job_id text, base_job_id text, target text, nt regclass, new_ref bigint, ot regclass, old_ref bigint, key_fields text[], min_iou double precision, apply boolean)
 RETURNS job_changes
 LANGUAGE plpgsql
AS $function$
DECLARE
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    kx   text := 'NULL::text';
    rest boolean;
    r    job_changes;
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
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, matched_by, old_bbox, new_bbox, area_delta_m2)
                    SELECT $1, m.old_fid,
                           CASE WHEN m.gh <> o.gh AND m.ph <> o.ph THEN ''geometry+attributes''
                                WHEN m.gh <> o.gh THEN ''geometry'' ELSE ''attributes'' END,
                           m.how, ST_Envelope(ot.geom), ST_Envelope(nt.geom), nt.area_m2 - ot.area_m2
                    FROM geoingest_match_new m
                    JOIN geoingest_match_old o ON o.rid = m.old_rid
                    JOIN %s nt ON nt.ctid = m.rid
                    JOIN %s ot ON ot.ctid = m.old_rid
                    WHERE o.changed', nt, ot) USING job_id;
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
           count(*) FILTER (WHERE m.how IS NOT NULL AND m.gh <> o.gh),
           count(*) FILTER (WHERE m.how IS NOT NULL AND m.ph <> o.ph),
           count(*) FILTER (WHERE m.how IS NOT NULL AND m.gh = o.gh AND m.ph = o.ph),
           count(*) FILTER (WHERE m.how = 'key'), count(*) FILTER (WHERE m.how = 'content'),
           count(*) FILTER (WHERE m.how = 'overlap')
    INTO r.added, r.geometry, r.attributes, r.unchanged, r.by_key, r.by_content, r.by_overlap
    FROM geoingest_match_new m LEFT JOIN geoingest_match_old o ON o.rid = m.old_rid;
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

DROP FUNCTION geoingest_same_geometry(geometry, geometry, double precision, double precision);
