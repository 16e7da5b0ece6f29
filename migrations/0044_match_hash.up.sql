-- geoingest schema, version 44: the match columns' hashes are cheap
-- (docs/design.md, "Versions as changes"; docs/benchmarks.md, "The write
-- gate").
--
-- Since 0032 every row stores geom_hash and props_hash, computed by the
-- writer: MD5 of the geometry's EWKB and of the properties' jsonb text.
-- MD5 was most of what the match columns cost a fresh load: measured per
-- parcel (ingest/prepare BenchmarkMatchHashes), MD5 of an EWKB or of a
-- properties text took some 6 times as long as the hash below, and the
-- two MD5s more than the properties' canonical text itself. Now both are
-- PostgreSQL's own 64-bit hash_bytes_extended (Jenkins' lookup3), which
-- the server exposes in SQL and the writer computes bit for bit
-- (ingest/prepare/hashbytes.go):
--
-- * geoingest_geom_hash(geom): hash_array_extended(ARRAY[ST_AsEWKB(geom)],
--   0), the bytea hash of the EWKB plus 31;
-- * geoingest_props_hash(properties): hashtextextended(properties::text
--   COLLATE "C", 0), the hash of the jsonb text's bytes.
--
-- Both are kept in the uuid columns of 0032, as 8 zero bytes and the hash
-- (geoingest_hash_uuid): no column is added or rewritten, and every
-- function that moves rows keeps moving them unchanged. A stored value of
-- that form is below geoingest_hash_form_end(); an MD5 stored before this
-- migration is not (its first 64 bits are all zero once in 2^64), and is
-- not compared: the match computes the new form from the row's content
-- instead, as for a row with no stored value. So the first version of a
-- source after the upgrade finds the same changes as it would have before
-- (TestMatchAcrossTheHashUpgrade); the rows it writes store the new form,
-- and the rows it keeps keep their MD5, so each later version hashes
-- those on the server again (as it does the rows that store no hash),
-- until a version rewrites them. (New bigint columns would save 16 bytes a row, but
-- every function that copies rows would change with them.)
--
-- Collisions: a key-matched pair is compared hash to hash, so a changed
-- geometry or attribute set goes unseen with probability 2^-64 per changed
-- feature; the content rule pairs rows on both hashes together (128 bits).
-- lookup3 is not cryptographic: a source's publisher could craft a change
-- that its own next version would not see, which it could as well by not
-- making it. The server's checksum of a job's rows (geoingest_row_hash,
-- verify) does not use these columns.
--
-- The hashes are the server's on a little-endian machine (every platform
-- PostgreSQL packages for but s390x); on a big-endian one the writer's
-- values differ from the server's and every feature would be seen as
-- changed; geoingest_hash_probe lets the writer check.

CREATE FUNCTION geoingest_hash_uuid(h bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lpad(to_hex(h), 32, '0')::uuid
$$;

-- The first uuid past every value geoingest_hash_uuid gives.
CREATE FUNCTION geoingest_hash_form_end() RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '00000000-0000-0001-0000-000000000000'::uuid
$$;

CREATE FUNCTION geoingest_geom_hash(geom geometry) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT geoingest_hash_uuid(hash_array_extended(ARRAY[ST_AsEWKB(geom)], 0))
$$;

CREATE FUNCTION geoingest_props_hash(properties jsonb) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT geoingest_hash_uuid(hashtextextended(properties::text COLLATE "C", 0))
$$;

-- geoingest_hash_probe is the server's hash of a fixed text, which the
-- writer compares with its own once per pool: where they differ, it
-- stores no hash and the server computes them (a big-endian server).
CREATE FUNCTION geoingest_hash_probe() RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('geoingest match hash probe: 0123456789' COLLATE "C", 0)
$$;

-- geoingest_diff_plan as 0037 made it, with an old row's hashes taken as
-- stored only when they are of the new form.
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

-- geoingest_version_sync as 0032 made it, with the rows the server must
-- see hashed in the new form.
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
                    SET area_m2 = i.area_m2, geom_hash = geoingest_geom_hash(i.geom),
                        props_hash = coalesce(h.props_hash, geoingest_props_hash(i.properties)),
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
