-- Undoes 0044: the match hashes are MD5 again. The rows that store a
-- hash of 0044's form lose it (NULL: computed by the server when a match
-- needs it), so that no stored value of one form is compared with one of
-- the other.
UPDATE geoingest_store.parcels SET geom_hash = NULL WHERE geom_hash < '00000000-0000-0001-0000-000000000000'::uuid;
UPDATE geoingest_store.parcels SET props_hash = NULL WHERE props_hash < '00000000-0000-0001-0000-000000000000'::uuid;
UPDATE geoingest_store.admin_units SET geom_hash = NULL WHERE geom_hash < '00000000-0000-0001-0000-000000000000'::uuid;
UPDATE geoingest_store.admin_units SET props_hash = NULL WHERE props_hash < '00000000-0000-0001-0000-000000000000'::uuid;

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

CREATE OR REPLACE FUNCTION geoingest_version_sync(key_fields text[], OUT written bigint, OUT area_m2 double precision)
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

DROP FUNCTION geoingest_hash_probe();
DROP FUNCTION geoingest_props_hash(jsonb);
DROP FUNCTION geoingest_geom_hash(geometry);
DROP FUNCTION geoingest_hash_form_end();
DROP FUNCTION geoingest_hash_uuid(bigint);
