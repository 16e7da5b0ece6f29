-- geoingest schema, version 25: a feature keeps its identity from one
-- version of its source to the next, and every replace records what
-- changed (docs/design.md, "Versions as changes").
--
-- * feature_id on the feature tables: NULL for a feature seen for the
--   first time (its feature_id is then its own id), else the feature_id of
--   the feature of the previous generation it was matched to. The views
--   parcels, admin_units and the current views show
--   coalesce(feature_id, id) AS feature_id: so a first load writes no
--   extra value, and every row of before this migration keeps its id as
--   its feature id.
-- * geoingest_match_generation: matches the rows a write gate has just
--   written against the rows of the generation they replace, in the
--   gate's transaction, before those are deleted: by the source's key,
--   then by identical content, then by geometry overlap; sets the matched
--   rows' feature_id, and records the changes, the lineage of splits and
--   merges, and the job's counts.
-- * job_changes (one row per job that replaced or retired a generation,
--   or made a source's first), feature_changes (one row per added, removed
--   or changed feature), feature_lineage; the view geoingest_changes.
--
-- Everything is written by the write gate's transaction, so it is exactly
-- once with the job: a duplicate delivery is stopped at the ledger's
-- primary key before any of it, and a superseded version writes none.

ALTER TABLE geoingest_store.parcels ADD COLUMN feature_id bigint;
ALTER TABLE geoingest_store.admin_units ADD COLUMN feature_id bigint;

-- The views, with the feature id last (CREATE OR REPLACE VIEW may only
-- append columns).
CREATE OR REPLACE VIEW parcels AS
SELECT p.id, p.job_ref, p.feature_index, p.layer, p.properties, p.geom, p.area_m2,
       coalesce(p.feature_id, p.id) AS feature_id
FROM geoingest_store.parcels p;

CREATE OR REPLACE VIEW admin_units AS
SELECT a.id, a.job_ref, a.feature_index, a.layer, a.properties, a.geom, a.area_m2,
       coalesce(a.feature_id, a.id) AS feature_id
FROM geoingest_store.admin_units a;

CREATE OR REPLACE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2,
       coalesce(p.feature_id, p.id) AS feature_id
FROM geoingest_store.parcels p
LEFT JOIN jobs j ON j.job_ref = p.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';

CREATE OR REPLACE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2,
       coalesce(a.feature_id, a.id) AS feature_id
FROM geoingest_store.admin_units a
LEFT JOIN jobs j ON j.job_ref = a.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';

-- A fold moves a row with its feature id (as in 0014, plus feature_id).
CREATE OR REPLACE FUNCTION geoingest_fold_job(job_id text, OUT new_ref bigint, OUT moved bigint)
LANGUAGE plpgsql AS $$
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
    EXECUTE format('WITH ins AS (INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2, feature_id FROM geoingest_store.%I
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
$$;

-- geoingest_key_value is a feature's normalised key: for each field of
-- fields (a composite key has several), a JSON string trimmed of
-- surrounding white space and upper-cased, a JSON number in its shortest
-- decimal form (trailing zeros dropped: 12.50 and 12.5 are one key);
-- NULL when any field is missing, null, empty or of another JSON type.
-- The parts are joined as a text array, so no value can forge another's
-- separator.
CREATE FUNCTION geoingest_key_value(properties jsonb, fields text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN count(*) = cardinality(fields) AND bool_and(v.x IS NOT NULL AND v.x <> '')
                THEN array_agg(v.x ORDER BY f.o)::text END
    FROM unnest(fields) WITH ORDINALITY f(name, o),
         LATERAL (SELECT CASE jsonb_typeof(properties -> f.name)
                             WHEN 'string' THEN upper(btrim(properties ->> f.name, E' \t\r\n'))
                             WHEN 'number' THEN trim_scale((properties -> f.name)::numeric)::text
                         END) v(x)
$$;

-- job_changes: one row per job that wrote, replaced or retired a
-- generation: its counts per kind of change. A feature whose geometry and
-- attributes both changed counts in both. xid is the writing
-- transaction's id: the change feed's cursor (see geoingest_change_feed).
CREATE TABLE job_changes (
    job_id           text PRIMARY KEY REFERENCES jobs (job_id) ON DELETE CASCADE,
    target_table     text NOT NULL,
    source_bucket    text NOT NULL,
    source_key       text NOT NULL,
    base_job_id      text,             -- the generation it replaced; NULL for a source's first
    added            bigint NOT NULL DEFAULT 0,
    removed          bigint NOT NULL DEFAULT 0,
    geometry         bigint NOT NULL DEFAULT 0,
    attributes       bigint NOT NULL DEFAULT 0,
    unchanged        bigint NOT NULL DEFAULT 0,
    by_key           bigint NOT NULL DEFAULT 0, -- matched by the source's key
    by_content       bigint NOT NULL DEFAULT 0, -- matched by identical content
    by_overlap       bigint NOT NULL DEFAULT 0, -- matched by geometry overlap
    duplicate_keys   bigint NOT NULL DEFAULT 0, -- new features whose key is not unique (matched by the other rules)
    lineage          bigint NOT NULL DEFAULT 0,
    bbox             geoingest_internal_geometry, -- the extent of every change, old and new
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    xid              xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX job_changes_xid_idx ON job_changes (xid);
CREATE INDEX job_changes_source_idx ON job_changes (source_bucket, source_key, recorded_at);

-- feature_changes: one row per feature added, removed or changed by a
-- job that replaced a generation (a source's first version and a delete
-- record their counts only). kind is added, removed, geometry, attributes
-- or geometry+attributes; the boxes are the old and new geometries'
-- envelopes; area_delta_m2 is new area minus old (on the spheroid).
CREATE TABLE feature_changes (
    job_id        text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    feature_id    bigint NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('added', 'removed', 'geometry', 'attributes', 'geometry+attributes')),
    matched_by    text CHECK (matched_by IN ('key', 'content', 'overlap')),
    old_bbox      geoingest_internal_geometry,
    new_bbox      geoingest_internal_geometry,
    area_delta_m2 double precision NOT NULL,
    PRIMARY KEY (job_id, feature_id)
);

-- feature_lineage: a removed feature and an added one of the same job
-- whose geometries overlap (a split, a merge, a redrawn boundary), with
-- the area they share.
CREATE TABLE feature_lineage (
    job_id         text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    old_feature_id bigint NOT NULL,
    new_feature_id bigint NOT NULL,
    shared_m2      double precision NOT NULL,
    PRIMARY KEY (job_id, old_feature_id, new_feature_id)
);

-- geoingest_changes is the documented changelog: one row per changed
-- feature, with the job, its source and when it was recorded. The boxes
-- keep the domain geoingest_internal_geometry (0017): a geometry to every
-- PostGIS function, but GIS clients do not list the changelog as a layer
-- beside parcels.
CREATE VIEW geoingest_changes AS
SELECT c.job_id, jc.target_table, jc.source_bucket, jc.source_key, jc.recorded_at,
       c.feature_id, c.kind, c.matched_by, c.old_bbox, c.new_bbox, c.area_delta_m2
FROM feature_changes c
JOIN job_changes jc ON jc.job_id = c.job_id;

-- geoingest_match_generation matches the rows of job new_ref (just
-- written, in its own table or the shared partition) with those of job
-- old_ref (the generation it replaces, still present) and records the
-- changes. The rules, in order, each among the rows the earlier ones left:
--   1. key: equal geoingest_key_value(properties, key_fields), where
--      key_fields is not empty; a key that two or more new rows (or two or
--      more old rows) have matches nothing by key, and the new rows that
--      have it are counted in duplicate_keys;
--   2. content: equal geometry (its EWKB, exactly: the coordinates as
--      stored after preparation) and equal properties (as jsonb, so the
--      order of attributes and white space do not count); equal rows are
--      paired in id order;
--   3. overlap: intersection over union of the geometries >= min_iou,
--      each the other's best (so one to one).
-- A matched row takes its predecessor's feature id; its change is
-- geometry, attributes, both, or none (unchanged). The rest are added or
-- removed; a removed and an added row that share area (more than 1% of
-- the smaller) get a lineage row. Call it in the write gate, before the
-- old rows are deleted.
CREATE FUNCTION geoingest_match_generation(target text, job_id text, base_job_id text,
                                           new_ref bigint, old_ref bigint,
                                           key_fields text[], min_iou double precision)
RETURNS job_changes
LANGUAGE plpgsql AS $$
DECLARE
    nt   text := format('geoingest_store.%I', geoingest_job_table(target, new_ref));
    ot   text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    r    job_changes;
    src  record;
BEGIN
    base_job_id := nullif(base_job_id, '');
    old_ref := nullif(old_ref, 0);
    SELECT j.source_bucket, j.source_key INTO src FROM jobs j WHERE j.job_id = geoingest_match_generation.job_id;
    r.job_id := job_id;
    r.target_table := target;
    r.source_bucket := src.source_bucket;
    r.source_key := src.source_key;
    r.base_job_id := base_job_id;
    r.added := 0; r.removed := 0; r.geometry := 0; r.attributes := 0; r.unchanged := 0;
    r.by_key := 0; r.by_content := 0; r.by_overlap := 0; r.duplicate_keys := 0; r.lineage := 0;
    r.recorded_at := now();
    r.xid := pg_current_xact_id();

    IF old_ref IS NULL THEN
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
    CREATE TEMP TABLE geoingest_match_old (rid tid, fid bigint, k text, gh uuid, ph bigint, taken boolean NOT NULL DEFAULT false) ON COMMIT DROP;
    EXECUTE format('INSERT INTO geoingest_match_new (rid, id, k, gh, ph)
                    SELECT ctid, id, CASE WHEN $2 THEN geoingest_key_value(properties, $3) END,
                           md5(ST_AsEWKB(geom))::uuid, jsonb_hash_extended(properties, 0)
                    FROM %s WHERE job_ref = $1', nt) USING new_ref, keyed, key_fields;
    EXECUTE format('INSERT INTO geoingest_match_old (rid, fid, k, gh, ph)
                    SELECT ctid, coalesce(feature_id, id), CASE WHEN $2 THEN geoingest_key_value(properties, $3) END,
                           md5(ST_AsEWKB(geom))::uuid, jsonb_hash_extended(properties, 0)
                    FROM %s WHERE job_ref = $1', ot) USING old_ref, keyed, key_fields;
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

    -- 3. Overlap, mutual best among the rest.
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

    -- The changes, where there is a predecessor to compare with.
    EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, matched_by, old_bbox, new_bbox, area_delta_m2)
                        SELECT $1, m.old_fid,
                               CASE WHEN m.gh <> o.gh AND m.ph <> o.ph THEN ''geometry+attributes''
                                    WHEN m.gh <> o.gh THEN ''geometry'' ELSE ''attributes'' END,
                               m.how, ST_Envelope(ot.geom), ST_Envelope(nt.geom), nt.area_m2 - ot.area_m2
                        FROM geoingest_match_new m
                        JOIN geoingest_match_old o ON o.rid = m.old_rid
                        JOIN %s nt ON nt.ctid = m.rid
                        JOIN %s ot ON ot.ctid = m.old_rid
                        WHERE m.how IS NOT NULL AND (m.gh <> o.gh OR m.ph <> o.ph)', nt, ot) USING job_id;
        EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, new_bbox, area_delta_m2)
                        SELECT $1, m.id, ''added'', ST_Envelope(nt.geom), nt.area_m2
                        FROM geoingest_match_new m JOIN %s nt ON nt.ctid = m.rid
                        WHERE m.how IS NULL', nt) USING job_id;
        EXECUTE format('INSERT INTO feature_changes (job_id, feature_id, kind, old_bbox, area_delta_m2)
                        SELECT $1, o.fid, ''removed'', ST_Envelope(ot.geom), -ot.area_m2
                        FROM geoingest_match_old o JOIN %s ot ON ot.ctid = o.rid
                        WHERE NOT o.taken', ot) USING job_id;
        EXECUTE format('INSERT INTO feature_lineage (job_id, old_feature_id, new_feature_id, shared_m2)
                        SELECT $1, o.fid, n.id, ST_Area(ST_Intersection(nt.geom, ot.geom)::geography)
                        FROM geoingest_match_new n JOIN %s nt ON nt.ctid = n.rid,
                             geoingest_match_old o JOIN %s ot ON ot.ctid = o.rid
                        WHERE n.how IS NULL AND NOT o.taken AND nt.geom && ot.geom
                          AND ST_Area(ST_Intersection(nt.geom, ot.geom)) > 0.01 * least(ST_Area(nt.geom), ST_Area(ot.geom))',
                       nt, ot) USING job_id;
        GET DIAGNOSTICS r.lineage = ROW_COUNT;

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
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_match_generation.job_id
          UNION ALL SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = geoingest_match_generation.job_id) x(e);
    INSERT INTO job_changes VALUES (r.*);
    -- Last, as it moves the rows the joins above found by ctid: the
    -- matched rows take their predecessors' feature ids.
    EXECUTE format('UPDATE %s t SET feature_id = m.old_fid FROM geoingest_match_new m
                    WHERE t.ctid = m.rid AND m.old_fid IS NOT NULL AND t.job_ref = $1', nt) USING new_ref;
    DROP TABLE pg_temp.geoingest_match_new, pg_temp.geoingest_match_old;
    RETURN r;
END
$$;

-- geoingest_record_retire records the changes of a delete job: every
-- feature of the retired generation removed (counts and extent only).
CREATE FUNCTION geoingest_record_retire(target text, job_id text, base_job_id text, old_ref bigint)
RETURNS job_changes
LANGUAGE plpgsql AS $$
DECLARE
    ot text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    r  job_changes;
BEGIN
    SELECT geoingest_record_retire.job_id, target, j.source_bucket, j.source_key, base_job_id
    INTO r.job_id, r.target_table, r.source_bucket, r.source_key, r.base_job_id
    FROM jobs j WHERE j.job_id = geoingest_record_retire.job_id;
    EXECUTE format('SELECT count(*), ST_Extent(geom)::geometry FROM %s WHERE job_ref = $1', ot)
        INTO r.removed, r.bbox USING old_ref;
    r.added := 0; r.geometry := 0; r.attributes := 0; r.unchanged := 0;
    r.by_key := 0; r.by_content := 0; r.by_overlap := 0; r.duplicate_keys := 0; r.lineage := 0;
    r.recorded_at := now();
    r.xid := pg_current_xact_id();
    INSERT INTO job_changes VALUES (r.*);
    RETURN r;
END
$$;

-- Rights, as 0014 set them: CREATE OR REPLACE resets a function's
-- SECURITY DEFINER and SET clauses (geoingest_fold_job). The functions
-- new here run with their caller's rights (SECURITY INVOKER), so that an
-- analyst who may run them cannot write anything with them.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)'] LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
END
$$;
