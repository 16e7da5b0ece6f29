-- Undoes 0058: geoingest_prefilter_keep as in 0051.
-- geoingest_prefilter_keep lists the kept features that do not stand for
-- themselves in the version's match columns; it returns the count, area
-- and extent of every kept feature, and the count and area of those left
-- out of the version. The extent is found from the edges of the
-- generation's (base_box, its version's as recorded) where it can be.
CREATE OR REPLACE FUNCTION geoingest_prefilter_keep(target text, old_ref bigint, base_box double precision[],
                                                    OUT kept bigint, OUT area_m2 double precision,
                                                    OUT min_x double precision, OUT min_y double precision,
                                                    OUT max_x double precision, OUT max_y double precision,
                                                    OUT bypassed bigint, OUT bypassed_area double precision)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot    text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    c     record;
    found boolean[] := '{f,f,f,f}';
BEGIN
    INSERT INTO pg_temp.geoingest_version (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)
    SELECT k.fi, k.match_key, k.geom_hash, k.props_hash, k.area_m2, false, NULL, NULL FROM pg_temp.geoingest_kept k;
    GET DIAGNOSTICS kept = ROW_COUNT;
    SELECT b.n, b.area_m2 INTO bypassed, bypassed_area FROM pg_temp.geoingest_bypass_n b;
    SELECT kept + bypassed, coalesce(sum(k.area_m2), 0) + bypassed_area INTO kept, area_m2 FROM pg_temp.geoingest_kept k;
    IF cardinality(base_box) = 4 THEN
        -- The kept rows are some of the generation's, whose extent is
        -- base_box (as its version recorded it): a side that a kept row
        -- attains is theirs. The rows on its edges are few (the GiST
        -- index finds them); only a side none of them attains takes a
        -- pass over every kept row.
        DROP TABLE IF EXISTS pg_temp.geoingest_kept_edge;
        EXECUTE format('CREATE TEMP TABLE geoingest_kept_edge ON COMMIT DROP AS
                        SELECT o.ctid AS rid, o.geom::box3d AS b FROM %s o
                        WHERE o.job_ref = $1
                          AND (o.geom && ST_MakeEnvelope($2[1], $2[2], $2[1], $2[4], 4326)
                               OR o.geom && ST_MakeEnvelope($2[3], $2[2], $2[3], $2[4], 4326)
                               OR o.geom && ST_MakeEnvelope($2[1], $2[2], $2[3], $2[2], 4326)
                               OR o.geom && ST_MakeEnvelope($2[1], $2[4], $2[3], $2[4], 4326))', ot)
        USING old_ref, base_box;
        ANALYZE pg_temp.geoingest_kept_edge;
        -- The edge rows hashed, the kept ones scanned once.
        FOR c IN SELECT ST_XMin(e.b) AS x0, ST_YMin(e.b) AS y0, ST_XMax(e.b) AS x1, ST_YMax(e.b) AS y1
                 FROM (SELECT k.rid FROM pg_temp.geoingest_kept k UNION ALL SELECT b.rid FROM pg_temp.geoingest_bypass b) k
                 JOIN pg_temp.geoingest_kept_edge e ON e.rid = k.rid LOOP
            found[1] := found[1] OR c.x0 = base_box[1];
            found[2] := found[2] OR c.y0 = base_box[2];
            found[3] := found[3] OR c.x1 = base_box[3];
            found[4] := found[4] OR c.y1 = base_box[4];
        END LOOP;
        IF found[1] AND found[2] AND found[3] AND found[4] THEN
            min_x := base_box[1]; min_y := base_box[2]; max_x := base_box[3]; max_y := base_box[4];
            RETURN;
        END IF;
    END IF;
    EXECUTE format('SELECT min(ST_XMin(b)), min(ST_YMin(b)), max(ST_XMax(b)), max(ST_YMax(b))
                    FROM (SELECT o.geom::box3d AS b
                          FROM (SELECT k.rid FROM pg_temp.geoingest_kept k UNION ALL SELECT b.rid FROM pg_temp.geoingest_bypass b) k
                          JOIN %s o ON o.ctid = k.rid
                          WHERE o.job_ref = $1) x', ot)
    INTO min_x, min_y, max_x, max_y USING old_ref;
END
$function$;
