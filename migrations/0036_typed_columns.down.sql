-- Back to 0034's typed views, cast from the records: the stored columns
-- are dropped (their values are in the records) and the views recreated
-- by the next `geoingest schema apply` of a 0034 binary.
DROP VIEW IF EXISTS geoingest_typed_parcels;
DROP VIEW IF EXISTS geoingest_typed_admin_units;
DO $$
DECLARE
    c record;
    t record;
BEGIN
    FOR c IN SELECT * FROM geoingest_typed_columns LOOP
        FOR t IN SELECT r.relname FROM pg_class r JOIN pg_namespace s ON s.oid = r.relnamespace
                 WHERE s.nspname = 'geoingest_store' AND r.relkind = 'r' AND NOT r.relispartition
                   AND r.relname LIKE c.target_table || '\_job\_%'
        LOOP
            EXECUTE format('ALTER TABLE geoingest_store.%I DROP COLUMN IF EXISTS %I', t.relname, c.name);
        END LOOP;
        EXECUTE format('ALTER TABLE geoingest_store.%I DROP COLUMN IF EXISTS %I', c.target_table, c.name);
    END LOOP;
END
$$;
DROP FUNCTION geoingest_insert_staged(text, bigint, boolean);
DROP FUNCTION geoingest_insert_staged_incoming(bigint, text, boolean);

-- 0035's definitions of the functions 0036 redefined.
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
                                                    match_key, geom_hash, props_hash)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', ot) INTO ins USING old_ref;
    ELSE
        -- A new table: the rows sent and the unchanged ones.
        nt := format('geoingest_store.%I', geoingest_job_table(target, new_ref));
        EXECUTE format('WITH a AS (INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash)
                                   SELECT i.id, $1, i.feature_index, i.layer, i.properties, i.geom, i.area_m2, x.fid,
                                          i.match_key, i.geom_hash, i.props_hash
                                   FROM (SELECT p.fi, p.fid FROM pg_temp.geoingest_match_changed p
                                         UNION ALL SELECT a.fi, NULL FROM pg_temp.geoingest_match_added a) x
                                   JOIN pg_temp.geoingest_incoming i ON i.feature_index = x.fi
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(a.h), 0) FROM a', nt) INTO ins USING new_ref;
        EXECUTE format('WITH k AS (INSERT INTO %s (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash)
                                   SELECT t.id, $1, t.feature_index, t.layer, t.properties, t.geom, t.area_m2, t.feature_id,
                                          t.match_key, t.geom_hash, t.props_hash
                                   FROM pg_temp.geoingest_match_pairs p JOIN %s t ON t.ctid = p.rid
                                   WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_match_changed c WHERE c.rid = p.rid)
                                   RETURNING geoingest_row_hash(feature_index, properties, geom) AS h)
                        SELECT coalesce(sum(k.h), 0) FROM k', nt, ot) INTO keep USING new_ref;
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
    EXECUTE format('WITH ins AS (INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                                 match_key, geom_hash, props_hash)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2, feature_id,
                                        match_key, geom_hash, props_hash FROM geoingest_store.%I
                                 RETURNING feature_index, properties, geom, area_m2)
                    SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM ins', shared, own)
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
$function$;

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
    EXECUTE format('INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2,
                                                    match_key, geom_hash, props_hash)
                    SELECT id, $1, feature_index, layer, properties, geom, area_m2,
                           match_key, geom_hash, props_hash FROM pg_temp.geoingest_incoming',
                   geoingest_job_table(target, new_ref))
        USING new_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;

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
    EXECUTE format('WITH moved AS (DELETE FROM geoingest_store.%I WHERE job_ref = $1
                                   RETURNING id, feature_index, layer, properties, geom, area_m2, feature_id,
                                             match_key, geom_hash, props_hash)
                    INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash)
                    SELECT id, $2, feature_index, layer, properties, geom, area_m2, feature_id,
                           match_key, geom_hash, props_hash FROM moved',
                   geoingest_job_table(target, -1), own)
        USING old_ref, new_ref;
    EXECUTE format('CREATE INDEX ON geoingest_store.%I USING gist (geom)', own);
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_pend_job_table.job_id;
    RETURN new_ref;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_apply_typed_view(target text, columns jsonb)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    v text := 'geoingest_typed_' || target;
    sel text := '';
    c jsonb;
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'typed view: unknown target %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR c IN SELECT e FROM jsonb_array_elements(columns) e LOOP
        IF (c ->> 'name') !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
            RAISE EXCEPTION 'typed view: column name %', c ->> 'name' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (c ->> 'type') NOT IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz') THEN
            RAISE EXCEPTION 'typed view: column % type %', c ->> 'name', c ->> 'type' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel := sel || format(', (c.properties ->> %L)::%s AS %I', c ->> 'name', c ->> 'type', c ->> 'name');
    END LOOP;
    BEGIN
        EXECUTE format('CREATE OR REPLACE VIEW %I AS
                        SELECT c.id, c.feature_id, c.job_id, c.job_ref, c.feature_index, c.layer, c.pipeline_version, c.area_m2,
                               c.properties -> ''extras'' AS extras, c.geom%s
                        FROM %I c JOIN jobs j ON j.job_id = c.job_id
                        WHERE j.params ? ''mapping''', v, sel, 'geoingest_current_' || target);
    EXCEPTION WHEN invalid_table_definition OR feature_not_supported OR datatype_mismatch THEN
        RAISE EXCEPTION 'typed view %: % (a typed column can only be added, at the end: drop the view to change or remove one)', v, SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I TO geoingest_analyst', v);
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        EXECUTE format('GRANT SELECT ON %I TO geoingest_writer', v);
    END IF;
    EXECUTE format('COMMENT ON VIEW %I IS %L', v,
                   'The current ' || target || ' written under a mapping of the typed schema, with its typed columns (geoingest schema apply).');
    RETURN v;
END
$function$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_fold_job(text) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_pend_job_table(text, text, bigint, bigint) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) RESET lock_timeout;
END
$$;
DROP FUNCTION geoingest_typed_casts(text, text);
DROP FUNCTION geoingest_typed_list(text, text);
DROP TABLE geoingest_typed_columns;
