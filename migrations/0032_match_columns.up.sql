-- geoingest schema, version 32: a new version of a source costs what
-- changed (docs/design.md, "Versions as changes").
--
-- Up to 0028 the write gate hashed both generations on the server at
-- every new version (md5 of every EWKB, a jsonb hash of every row's
-- properties, the key of every row), after copying the whole new version
-- into a temporary table. Now:
--
-- * every feature row stores its match columns, computed by the prepare
--   workers as the rows stream (ingest/prepare/identity.go): match_key
--   (the source's key, normalised, behind the key's field names), geom_hash
--   (md5 of the geometry's EWKB) and props_hash (md5 of the properties'
--   jsonb text). Each is also an SQL expression, so a row without them
--   (written before this migration, transformed or repaired by the
--   server, or stored under another key) is computed here when a match
--   needs it and compares equal. Adding the columns rewrites nothing.
-- * a new version is first sent as its rows' match columns only
--   (pg_temp.geoingest_version); the writer keeps the rows themselves in a
--   local spool. The match by key and by content is one join of those
--   columns with the current generation's (geoingest_diff_plan); only the
--   rows to write (added, changed, and those the server must measure or
--   repair) are then sent whole, into pg_temp.geoingest_incoming; the
--   overlap rule runs on what is left, and only the changed rows are
--   deleted and inserted (geoingest_diff_apply).
-- * the ledger's checksum is kept up to date by difference (the replaced
--   generation's, less the deleted rows', plus the inserted rows'): the
--   unchanged rows are never read for it.
-- * geoingest_key_part upper-cases ASCII letters only (translate, not
--   upper(), whose result depends on the database's locale): the writer
--   computes the same key.

ALTER TABLE geoingest_store.parcels ADD COLUMN match_key text, ADD COLUMN geom_hash uuid, ADD COLUMN props_hash uuid;
ALTER TABLE geoingest_store.admin_units ADD COLUMN match_key text, ADD COLUMN geom_hash uuid, ADD COLUMN props_hash uuid;

-- A held version's own table (0027) is no partition: it gets the columns
-- too, so that it can be attached when approved.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'geoingest_store' AND c.relkind = 'r' AND NOT c.relispartition
               AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'feature_index')
               AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'geom_hash')
    LOOP
        EXECUTE format('ALTER TABLE geoingest_store.%I ADD COLUMN match_key text, ADD COLUMN geom_hash uuid, ADD COLUMN props_hash uuid',
                       t.relname);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_key_part(properties jsonb, field text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(properties -> field)
               WHEN 'string' THEN nullif(translate(btrim(properties ->> field, E' \t\r\n'),
                                                   'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), '')
               WHEN 'number' THEN trim_scale((properties -> field)::numeric)::text
           END
$$;

-- geoingest_match_key_expr is the SQL expression of a row's match_key for
-- key_fields over the jsonb expression props: the key's field names as a
-- text array and ':' (the signature, $sig below), then the key as
-- geoingest_key_of gives it, or nothing when the row has no key. Only the
-- count of fields is written into it: the names are the parameter
-- $<param>.
CREATE FUNCTION geoingest_match_key_expr(key_fields text[], props text, param int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT 'coalesce(geoingest_key_of(ARRAY['
           || string_agg(format('geoingest_key_part(%s, $%s[%s])', props, param, i), ', ' ORDER BY i)
           || ']), '''')'
    FROM generate_series(1, cardinality(key_fields)) i
$$;

-- geoingest_create_version creates the write gate's temporary table of a
-- new version's match columns, one row per feature: its index, match
-- columns and area, must (the server must measure, check or repair it:
-- the row is sent whole at once), and where the writer's spool holds the
-- row. Dropped at commit.
CREATE FUNCTION geoingest_create_version() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_version;
    CREATE TEMP TABLE geoingest_version (feature_index bigint, match_key text, geom_hash uuid, props_hash uuid,
                                         area_m2 double precision, must boolean, spool_off bigint, spool_len integer)
        ON COMMIT DROP;
END
$$;

-- geoingest_version_add_staged lists in geoingest_version the rows that
-- the server transformed into geoingest_incoming (no spool: they are
-- there already), to be measured and hashed by geoingest_version_sync.
CREATE FUNCTION geoingest_version_add_staged() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE 'INSERT INTO pg_temp.geoingest_version (feature_index, must)
             SELECT i.feature_index, true FROM pg_temp.geoingest_incoming i
             WHERE NOT EXISTS (SELECT FROM pg_temp.geoingest_version h WHERE h.feature_index = i.feature_index)';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_spooled lists where the writer's spool holds the rows to send
-- whole: what 'must' (the rows the server measures, checks or repairs),
-- 'write' (after geoingest_diff_plan: the rows that are not unchanged and
-- not sent yet) or 'all' (every row not sent yet), in spool order, at
-- most n of them past the spool offset after (the writer pages through a
-- long list, so that its memory stays flat).
CREATE FUNCTION geoingest_spooled(what text, after bigint, n integer) RETURNS TABLE (spool_off bigint, spool_len integer)
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
BEGIN
    IF what = 'must' THEN
        RETURN QUERY EXECUTE 'SELECT h.spool_off, h.spool_len FROM pg_temp.geoingest_version h
                              WHERE h.must AND h.spool_off > $1 ORDER BY h.spool_off LIMIT $2' USING after, n;
    ELSIF what = 'write' THEN
        RETURN QUERY EXECUTE 'SELECT h.spool_off, h.spool_len FROM pg_temp.geoingest_version h
                              WHERE NOT h.must AND h.spool_off > $1
                                AND h.feature_index IN (SELECT c.fi FROM pg_temp.geoingest_match_changed c
                                                        UNION ALL SELECT a.fi FROM pg_temp.geoingest_match_added a)
                              ORDER BY h.spool_off LIMIT $2' USING after, n;
    ELSIF what = 'all' THEN
        RETURN QUERY EXECUTE 'SELECT h.spool_off, h.spool_len FROM pg_temp.geoingest_version h
                              WHERE h.spool_off > $1
                                AND NOT EXISTS (SELECT FROM pg_temp.geoingest_incoming i WHERE i.feature_index = h.feature_index)
                              ORDER BY h.spool_off LIMIT $2' USING after, n;
    ELSE
        RAISE EXCEPTION 'geoingest_spooled: unknown %', what;
    END IF;
END
$$;

-- geoingest_version_sync runs after geoingest_finish_incoming checked the
-- rows sent whole at once: those rows ('must') take their area and match
-- columns from geoingest_incoming as the server left them (measured,
-- repaired; and the incoming rows the same match columns), and the ones it dropped (no area left after repair) leave
-- the version. It returns the version's count and area: a full load's.
CREATE FUNCTION geoingest_version_sync(key_fields text[], OUT written bigint, OUT area_m2 double precision)
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    kx text := 'NULL::text';
BEGIN
    IF keyed THEN
        kx := '$1 || ' || geoingest_match_key_expr(key_fields, 'i.properties', 2);
    END IF;
    EXECUTE format('UPDATE pg_temp.geoingest_version h
                    SET area_m2 = i.area_m2, geom_hash = md5(ST_AsEWKB(i.geom))::uuid,
                        props_hash = coalesce(h.props_hash, md5(i.properties::text)::uuid),
                        match_key = coalesce(h.match_key, %s)
                    FROM pg_temp.geoingest_incoming i WHERE h.must AND i.feature_index = h.feature_index', kx)
        USING key_fields::text || ':', key_fields;
    EXECUTE 'UPDATE pg_temp.geoingest_incoming i SET match_key = h.match_key, geom_hash = h.geom_hash, props_hash = h.props_hash
             FROM pg_temp.geoingest_version h WHERE h.must AND i.feature_index = h.feature_index';
    EXECUTE 'DELETE FROM pg_temp.geoingest_version h
             WHERE h.must AND NOT EXISTS (SELECT FROM pg_temp.geoingest_incoming i WHERE i.feature_index = h.feature_index)';
    EXECUTE 'SELECT count(*), coalesce(sum(h.area_m2), 0) FROM pg_temp.geoingest_version h' INTO written, area_m2;
END
$$;

-- geoingest_diff_plan matches the version in geoingest_version with the
-- generation of old_ref in target by the first two rules of
-- geoingest_match_generation (0025): the key, where unique on both sides
-- (the new rows whose key is not unique are counted in duplicate_keys),
-- then identical content (equal geometry and properties hashes), paired
-- in order among equals. The pairs are kept in
-- pg_temp.geoingest_match_pairs (new feature_index fi, old ctid rid, the
-- old feature id fid, how, and whether geometry or attributes changed),
-- the old rows in pg_temp.geoingest_match_old; what is left to do in
-- small tables: the changed pairs (geoingest_match_changed), the new rows
-- unmatched (geoingest_match_added: fi) and the old ones
-- (geoingest_match_removed: rid, fid). It returns the version's count and
-- how many of its rows are to be written (not unchanged).
CREATE FUNCTION geoingest_diff_plan(target text, old_ref bigint, key_fields text[],
                                    OUT total bigint, OUT to_write bigint, OUT duplicate_keys bigint)
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
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
$$;

-- geoingest_diff_apply finishes the match that geoingest_diff_plan began,
-- with every row not unchanged now in geoingest_incoming: the overlap rule
-- among the rows still unmatched (intersection over union at least
-- min_iou, each the other's best), the changes recorded (job_changes,
-- feature_changes, feature_lineage, as 0025), and then, in the storage of
-- old_ref, the removed and changed rows deleted and the added and changed
-- ones inserted, with their feature ids and match columns; unchanged rows
-- are not touched. The job's checksum in the ledger becomes the replaced
-- generation's, less the deleted rows', plus the inserted rows': a full
-- load's. duplicate_keys is the plan's count. It returns the job's changes.
--
-- With new_ref other than old_ref (a version in which most rows changed,
-- in a table of its own), the new generation is written whole into the
-- job's own table for new_ref instead (made by
-- geoingest_create_job_storage, then indexed here): the rows sent and the
-- unchanged rows of the old generation, copied on the server; the old
-- generation is left for the caller to retire. Inserting most of a
-- generation into its old table, through its index, and leaving as many
-- dead rows there, would cost more than writing it anew.
CREATE FUNCTION geoingest_diff_apply(job_id text, base_job_id text, target text, old_ref bigint, min_iou double precision,
                                     duplicate_keys bigint, new_ref bigint)
RETURNS job_changes
LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
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
$$;

-- Moving rows keeps their match columns: a fold (0025), a held version
-- (0027).
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
$$;

CREATE OR REPLACE FUNCTION geoingest_pend_job_table(target text, job_id text, old_ref bigint, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
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
$$;

CREATE OR REPLACE FUNCTION geoingest_pend_incoming(target text, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
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
$$;

-- Rights, as 0014 set them: CREATE OR REPLACE resets a function's
-- SECURITY DEFINER and SET clauses (geoingest_fold_job, and
-- geoingest_pend_job_table, which 0027 made SECURITY DEFINER: it moves a
-- held version's table in the store, which the writer may not). The functions
-- new here run with their caller's rights (SECURITY INVOKER), so that an
-- analyst who may run them cannot write anything with them.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
    FOREACH f IN ARRAY ARRAY['geoingest_fold_job(text)', 'geoingest_pend_job_table(text, text, bigint, bigint)'] LOOP
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
