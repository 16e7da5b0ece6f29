-- geoingest schema, version 49: the raw-bytes prefilter (docs/design.md,
-- "Versions as changes"). A new version's features whose salted raw hash
-- (0047) equals a row of the current generation are that row: same salt
-- and same bytes make the same stored row. The write gate reads the file
-- once for the hashes only (geomio's RawHashOnly), copies them into
-- pg_temp.geoingest_raw, and geoingest_prefilter_match finds the features
-- kept by their bytes (pg_temp.geoingest_kept). Their match columns are
-- copied from the rows into pg_temp.geoingest_version
-- (geoingest_prefilter_keep), so that the match sees the whole version, as
-- a full read would give it, and the write gate's second read skips them:
-- they are neither parsed nor spooled nor sent. Where the version needs one
-- of them whole (a held version, a kept feature that the match does not
-- pair unchanged), geoingest_prefilter_send copies it from its row into
-- pg_temp.geoingest_incoming.
--
-- A row is taken for a feature only when the writer would give the
-- feature those very match columns: its hashes in the current form
-- (geoingest_hash_form_end) and, for a keyed source, its match key under
-- the same key fields. A raw hash that repeats among the rows is harmless:
-- all its rows have one content, and any one of them stands for the
-- feature (the match pairs by the match columns, never by row).

CREATE OR REPLACE FUNCTION geoingest_prefilter_create()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_raw, pg_temp.geoingest_kept;
    CREATE TEMP TABLE geoingest_raw (fi bigint, raw bigint) ON COMMIT DROP;
END
$function$;

CREATE OR REPLACE FUNCTION geoingest_prefilter_match(target text, old_ref bigint, key_fields text[], OUT total bigint, OUT kept bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot    text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    sig   text := key_fields::text || ':';
BEGIN
    DROP TABLE IF EXISTS pg_temp.geoingest_kept;
    ANALYZE pg_temp.geoingest_raw;
    EXECUTE format('CREATE TEMP TABLE geoingest_kept ON COMMIT DROP AS
                    SELECT r.fi, o.ctid AS rid, o.match_key, o.geom_hash, o.props_hash, o.area_m2
                    FROM pg_temp.geoingest_raw r JOIN %s o ON o.raw_hash = r.raw
                    WHERE o.job_ref = $1 AND o.geom_hash < geoingest_hash_form_end()
                      AND o.props_hash < geoingest_hash_form_end()
                      AND (NOT $2 OR starts_with(o.match_key, $3))', ot) USING old_ref, keyed, sig;
    SELECT count(*) INTO total FROM pg_temp.geoingest_raw;
    SELECT count(*) INTO kept FROM pg_temp.geoingest_kept;
END
$function$;

-- geoingest_prefilter_kept lists the kept features' indexes (the write
-- gate's second read skips them).
CREATE OR REPLACE FUNCTION geoingest_prefilter_kept()
 RETURNS SETOF bigint
 LANGUAGE plpgsql
AS $function$
BEGIN
    RETURN QUERY SELECT k.fi FROM pg_temp.geoingest_kept k;
END
$function$;

-- geoingest_prefilter_dedupe keeps one row of each kept feature found more
-- than once (its bytes are those of several rows, of one content).
CREATE OR REPLACE FUNCTION geoingest_prefilter_dedupe()
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
AS $function$
DECLARE
    n bigint;
BEGIN
    DELETE FROM pg_temp.geoingest_kept k
    WHERE k.ctid NOT IN (SELECT min(d.ctid) FROM pg_temp.geoingest_kept d GROUP BY d.fi);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;

-- geoingest_prefilter_keep lists the kept features in the version's match
-- columns and returns their count and area, and their extent (EPSG:4326,
-- the coordinates' own, as the prepare workers measure a feature's).
CREATE OR REPLACE FUNCTION geoingest_prefilter_keep(target text, old_ref bigint, OUT kept bigint, OUT area_m2 double precision,
                                                    OUT min_x double precision, OUT min_y double precision,
                                                    OUT max_x double precision, OUT max_y double precision)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
BEGIN
    INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
    SELECT k.fi, k.match_key, k.geom_hash, k.props_hash, k.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept k;
    GET DIAGNOSTICS kept = ROW_COUNT;
    SELECT sum(k.area_m2) INTO area_m2 FROM pg_temp.geoingest_kept k;
    EXECUTE format('SELECT min(ST_XMin(b)), min(ST_YMin(b)), max(ST_XMax(b)), max(ST_YMax(b))
                    FROM (SELECT o.geom::box3d AS b FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                          WHERE o.job_ref = $1) x', ot)
    INTO min_x, min_y, max_x, max_y USING old_ref;
END
$function$;

-- geoingest_prefilter_send copies kept features from their rows into
-- pg_temp.geoingest_incoming, under old_ref, as the writer would have sent
-- them: with every_one, all that are not there yet (a held version is kept
-- whole), else those the match added or changed.
CREATE OR REPLACE FUNCTION geoingest_prefilter_send(target text, old_ref bigint, every_one boolean)
 RETURNS bigint
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    n  bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_temp.geoingest_kept) THEN
        RETURN 0;
    END IF;
    -- The match's tables exist only once it ran: each case is its own
    -- statement.
    IF every_one THEN
        EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2,
                                                                 match_key, geom_hash, props_hash, raw_hash)
                        SELECT $1, k.fi, o.layer, o.properties, o.geom, o.area_m2, o.match_key, o.geom_hash, o.props_hash, o.raw_hash
                        FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                        WHERE o.job_ref = $1
                          AND NOT EXISTS (SELECT FROM pg_temp.geoingest_incoming i WHERE i.feature_index = k.fi)', ot)
        USING old_ref;
    ELSE
        EXECUTE format('INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2,
                                                                 match_key, geom_hash, props_hash, raw_hash)
                        SELECT $1, k.fi, o.layer, o.properties, o.geom, o.area_m2, o.match_key, o.geom_hash, o.props_hash, o.raw_hash
                        FROM pg_temp.geoingest_kept k JOIN %s o ON o.ctid = k.rid
                        WHERE o.job_ref = $1
                          AND k.fi IN (SELECT c.fi FROM pg_temp.geoingest_match_changed c
                                       UNION ALL SELECT a.fi FROM pg_temp.geoingest_match_added a)', ot)
        USING old_ref;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
