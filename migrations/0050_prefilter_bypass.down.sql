-- Undoes 0050: every feature kept by its bytes is listed in the version.

DROP FUNCTION IF EXISTS geoingest_diff_plan(text, bigint, text[], boolean);

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

DROP FUNCTION geoingest_prefilter_keep(text, bigint, double precision[]);

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
