-- geoingest schema, version 36: the typed columns are stored
-- (docs/schema.md). 0034 cast them from each feature's record in a view;
-- now each column of the typed schema is a real column of the feature
-- table (geoingest_store.parcels, geoingest_store.admin_units), written by
-- the workers' COPY from the same record (ingest/postgis/typed.go), so
-- that clients and analysts read typed values, not casts.
--
-- * geoingest_typed_columns is the register of the stored typed columns,
--   in order: the one place where identifiers from the schema file become
--   SQL. Its CHECKs admit only lower-case names (letters, digits, _) and
--   the six types; every statement built from it quotes the name (%I) and
--   takes the type from that list.
-- * geoingest_apply_typed_view (geoingest schema apply), redefined: it
--   adds the columns new at the end of the file to the feature table with
--   ALTER TABLE ... ADD COLUMN, no default: a change of the catalog only,
--   no row rewritten, for every partition, and to the tables of pending
--   versions (detached); then the view geoingest_typed_<target> reads the
--   stored columns. A column dropped, renamed, moved or retyped is
--   refused, as before.
-- * every function that moves rows from one feature table to another
--   (a diff's apply, a fold, a held version) carries the typed columns
--   (geoingest_typed_list); the staged path (features in another CRS)
--   casts them on the server from the record, which the worker has cast
--   and normalised already (a mapped job only).
-- * the typed views of 0034 are converted: their columns are added to the
--   storage and filled once from the records (a rewrite of the mapped
--   rows, at this migration only).

CREATE TABLE geoingest_typed_columns (
    target_table text NOT NULL CHECK (target_table IN ('parcels', 'admin_units')),
    position     int NOT NULL CHECK (position > 0),
    name         text NOT NULL CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
    type         text NOT NULL CHECK (type IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz')),
    added_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (target_table, name),
    UNIQUE (target_table, position)
);
COMMENT ON TABLE geoingest_typed_columns IS
    'The typed columns stored in each feature table, in order (geoingest schema apply; migration 0036).';

-- geoingest_typed_list is the target's typed columns as SQL list items,
-- each behind ', ': their quoted names (alias NULL), or alias.name. Empty
-- when the target has none.
CREATE FUNCTION geoingest_typed_list(target text, alias text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(CASE WHEN alias IS NULL THEN format(', %I', c.name)
                                    ELSE format(', %I.%I', alias, c.name) END, '' ORDER BY c.position), '')
    FROM geoingest_typed_columns c WHERE c.target_table = target
$$;

-- geoingest_typed_casts is the target's typed columns cast from the
-- record in alias.properties, as list items behind ', ' (the staged path
-- of a mapped job: the worker cast and normalised each value, so these
-- casts do not fail; a column the mapping does not map is NULL).
CREATE FUNCTION geoingest_typed_casts(target text, alias text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(format(', (%I.properties ->> %L)::%s', alias, c.name,
                                      CASE c.type WHEN 'text' THEN 'text' WHEN 'int8' THEN 'int8' WHEN 'numeric' THEN 'numeric'
                                                  WHEN 'boolean' THEN 'boolean' WHEN 'date' THEN 'date' ELSE 'timestamptz' END),
                               '' ORDER BY c.position), '')
    FROM geoingest_typed_columns c WHERE c.target_table = target
$$;

-- geoingest_apply_typed_view: see the top. Columns is the file's typed
-- columns of target, a JSON array of {"name", "type"}, in order.
CREATE OR REPLACE FUNCTION geoingest_apply_typed_view(target text, columns jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v    text := 'geoingest_typed_' || target;
    sel  text;
    c    jsonb;
    o    bigint;
    have record;
    n    int := 0;
    t    record;
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'typed view: unknown target %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_typeof(columns) <> 'array' THEN
        RAISE EXCEPTION 'typed view: columns must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR c IN SELECT e FROM jsonb_array_elements(columns) e LOOP
        IF (c ->> 'name') IS NULL OR (c ->> 'name') !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
            RAISE EXCEPTION 'typed view: column name %', c ->> 'name' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (c ->> 'type') IS NULL OR (c ->> 'type') NOT IN ('text', 'int8', 'numeric', 'boolean', 'date', 'timestamptz') THEN
            RAISE EXCEPTION 'typed view: column % type %', c ->> 'name', c ->> 'type' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- One at a time: two applies never add the same column twice.
    LOCK TABLE geoingest_typed_columns IN SHARE ROW EXCLUSIVE MODE;
    -- The stored columns come first, in their order, with their types.
    FOR have IN SELECT * FROM geoingest_typed_columns WHERE target_table = target ORDER BY position LOOP
        n := n + 1;
        c := columns -> (have.position - 1);
        IF c IS NULL OR c ->> 'name' <> have.name OR c ->> 'type' <> have.type THEN
            RAISE EXCEPTION 'typed view %: column % % is stored at position %, the schema has %: a typed column can only be added, at the end (drop the view and the column to change or remove one)',
                v, have.name, have.type, have.position, coalesce((c ->> 'name') || ' ' || (c ->> 'type'), 'none')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- The new ones: a change of the catalog, no row rewritten.
    FOR c, o IN SELECT e, x.o FROM jsonb_array_elements(columns) WITH ORDINALITY x(e, o) WHERE x.o > n ORDER BY x.o LOOP
        IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = format('geoingest_store.%I', target)::regclass
                   AND a.attname = c ->> 'name' AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'typed view %: % is a column of the feature table already: choose another name', v, c ->> 'name'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN %I %s', target, c ->> 'name', c ->> 'type');
        -- The tables of pending versions, detached until approved.
        FOR t IN SELECT r.relname FROM pg_class r JOIN pg_namespace s ON s.oid = r.relnamespace
                 WHERE s.nspname = 'geoingest_store' AND r.relkind = 'r' AND NOT r.relispartition
                   AND r.relname LIKE target || '\_job\_%'
                   AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attname = c ->> 'name')
        LOOP
            EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN %I %s', t.relname, c ->> 'name', c ->> 'type');
        END LOOP;
        INSERT INTO geoingest_typed_columns (target_table, position, name, type) VALUES (target, o, c ->> 'name', c ->> 'type');
    END LOOP;
    sel := geoingest_typed_list(target, 'p');
    BEGIN
        EXECUTE format('CREATE OR REPLACE VIEW %I AS
                        SELECT p.id, coalesce(p.feature_id, p.id) AS feature_id, j.job_id, p.job_ref, p.feature_index, p.layer,
                               s.pipeline_version, p.area_m2, p.properties -> ''extras'' AS extras, p.geom%s
                        FROM geoingest_store.%I p
                        JOIN jobs j ON j.job_ref = p.job_ref
                        LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = %L
                        WHERE j.params ? ''mapping''', v, sel, target, target);
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
                   'The current ' || target || ' written under a mapping of the typed schema, with its stored typed columns (geoingest schema apply).');
    RETURN v;
END
$$;

-- The staged path (features in another CRS than EPSG:4326) of a mapped
-- job: the typed columns cast from the record, on the server.
CREATE FUNCTION geoingest_insert_staged(target text, job_ref bigint, mapped boolean) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('INSERT INTO geoingest_store.%I (job_ref, feature_index, layer, properties, geom%s)
                    SELECT $1, s.feature_index, s.layer, s.properties, ST_Transform(ST_GeomFromEWKB(s.wkb), 4326)%s
                    FROM geoingest_staging s', geoingest_job_table(target, job_ref),
                   CASE WHEN mapped THEN geoingest_typed_list(target, NULL) ELSE '' END,
                   CASE WHEN mapped THEN geoingest_typed_casts(target, 's') ELSE '' END)
        USING job_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

CREATE FUNCTION geoingest_insert_staged_incoming(job_ref bigint, target text, mapped boolean) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom%s)
                    SELECT $1, s.feature_index, s.layer, s.properties, ST_Transform(ST_GeomFromEWKB(s.wkb), 4326)%s
                    FROM pg_temp.geoingest_staging s',
                   CASE WHEN mapped THEN geoingest_typed_list(target, NULL) ELSE '' END,
                   CASE WHEN mapped THEN geoingest_typed_casts(target, 's') ELSE '' END)
        USING job_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Moving rows keeps their typed columns: a diff's apply (0032), a fold
-- (0032), a held version (0032).
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
                                                                 match_key, geom_hash, props_hash%2$s)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2, feature_id,
                                        match_key, geom_hash, props_hash%2$s FROM geoingest_store.%3$I
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
    EXECUTE format('INSERT INTO geoingest_store.%1$I (id, job_ref, feature_index, layer, properties, geom, area_m2,
                                                    match_key, geom_hash, props_hash%2$s)
                    SELECT id, $1, feature_index, layer, properties, geom, area_m2,
                           match_key, geom_hash, props_hash%2$s FROM pg_temp.geoingest_incoming',
                   geoingest_job_table(target, new_ref), geoingest_typed_list(target, NULL))
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
    EXECUTE format('WITH moved AS (DELETE FROM geoingest_store.%1$I WHERE job_ref = $1
                                   RETURNING id, feature_index, layer, properties, geom, area_m2, feature_id,
                                             match_key, geom_hash, props_hash%3$s)
                    INSERT INTO geoingest_store.%2$I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id,
                                                    match_key, geom_hash, props_hash%3$s)
                    SELECT id, $2, feature_index, layer, properties, geom, area_m2, feature_id,
                           match_key, geom_hash, props_hash%3$s FROM moved',
                   geoingest_job_table(target, -1), own, geoingest_typed_list(target, NULL))
        USING old_ref, new_ref;
    EXECUTE format('CREATE INDEX ON geoingest_store.%I USING gist (geom)', own);
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_pend_job_table.job_id;
    RETURN new_ref;
END
$function$;

-- Rights, as 0032 set them (CREATE OR REPLACE resets SECURITY DEFINER and
-- SET): the fold, the held version's move and the schema's apply run as
-- the schema owner (they change geoingest_store, which the writer may
-- not); the writer may call them, the analyst not.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
    -- A lock wait of the apply (its ALTER TABLE waits for the writes and
    -- reads in flight, and holds the readers that come after it) is
    -- bounded: it fails, to be run again, rather than stall the readers.
    EXECUTE format('ALTER FUNCTION geoingest_apply_typed_view(text, jsonb) SECURITY DEFINER SET search_path = %I, pg_temp SET lock_timeout = %L',
                   current_schema(), '10s');
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)', 'geoingest_apply_typed_view(text, jsonb)'] LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT SELECT ON geoingest_typed_columns TO geoingest_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        GRANT SELECT ON geoingest_typed_columns TO geoingest_analyst;
    END IF;
END
$$;

-- The typed views of 0034, converted: their columns stored, filled from
-- the records of the mapped jobs (in the feature table and in the tables
-- of pending versions), and the views redefined on them.
DO $$
DECLARE
    tg   text;
    cols jsonb;
    t    record;
BEGIN
    FOREACH tg IN ARRAY ARRAY['parcels', 'admin_units'] LOOP
        IF to_regclass('geoingest_typed_' || tg) IS NULL THEN
            CONTINUE;
        END IF;
        SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.attname,
                                                     'type', CASE format_type(a.atttypid, a.atttypmod)
                                                                 WHEN 'bigint' THEN 'int8' WHEN 'timestamp with time zone' THEN 'timestamptz'
                                                                 ELSE format_type(a.atttypid, a.atttypmod) END) ORDER BY a.attnum), '[]')
        INTO cols
        FROM pg_attribute a WHERE a.attrelid = ('geoingest_typed_' || tg)::regclass AND a.attnum > 10 AND NOT a.attisdropped;
        PERFORM geoingest_apply_typed_view(tg, cols);
        IF jsonb_array_length(cols) = 0 THEN
            CONTINUE;
        END IF;
        FOR t IN SELECT r.relname FROM pg_class r JOIN pg_namespace s ON s.oid = r.relnamespace
                 WHERE s.nspname = 'geoingest_store' AND r.relname LIKE tg || '\_%'
                   AND ((r.relkind = 'r' AND NOT r.relispartition) OR r.relname = tg)
        LOOP
            EXECUTE format('UPDATE geoingest_store.%I p SET (%s) = ROW(%s) FROM jobs j WHERE j.job_ref = p.job_ref AND j.params ? ''mapping''',
                           t.relname, substr(geoingest_typed_list(tg, NULL), 3), substr(geoingest_typed_casts(tg, 'p'), 3));
        END LOOP;
        EXECUTE format('UPDATE geoingest_store.%I p SET (%s) = ROW(%s) FROM jobs j WHERE j.job_ref = p.job_ref AND j.params ? ''mapping''',
                       tg, substr(geoingest_typed_list(tg, NULL), 3), substr(geoingest_typed_casts(tg, 'p'), 3));
    END LOOP;
END
$$;
