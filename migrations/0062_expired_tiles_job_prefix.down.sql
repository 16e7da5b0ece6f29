-- Undoes 0062: geoingest_expired_tiles takes only a whole job id again.
CREATE OR REPLACE FUNCTION geoingest_expired_tiles(job_id text, min_zoom integer DEFAULT 0, max_zoom integer DEFAULT 14, max_tiles bigint DEFAULT 100000, buffer double precision DEFAULT (64.0 / (4096)::numeric))
 RETURNS TABLE(z integer, x integer, y integer)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    zz    int;
    n     bigint;
    total bigint := 0;
    deep  int := -1;
BEGIN
    IF min_zoom < 0 OR max_zoom > 30 OR min_zoom > max_zoom THEN
        RAISE EXCEPTION 'zoom range %-%: want 0 <= min <= max <= 30', min_zoom, max_zoom USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_tiles < 1 OR buffer < 0 OR buffer > 1 THEN
        RAISE EXCEPTION 'max_tiles % and buffer %: want at least one tile and a buffer in [0, 1]', max_tiles, buffer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR zz IN min_zoom .. max_zoom LOOP
        n := geoingest_job_tile_count(job_id, zz, buffer, max_tiles - total);
        EXIT WHEN n IS NULL;
        total := total + n;
        deep := zz;
    END LOOP;
    IF deep < 0 THEN
        -- Not even min_zoom fits: the deepest zoom below it that does.
        FOR zz IN REVERSE min_zoom - 1 .. 0 LOOP
            IF geoingest_job_tile_count(job_id, zz, buffer, max_tiles) IS NOT NULL THEN
                RETURN QUERY SELECT zz, t.x, t.y FROM geoingest_job_tiles_at(job_id, zz, buffer) t ORDER BY 2, 3;
                RETURN;
            END IF;
        END LOOP;
        RETURN;
    END IF;
    FOR zz IN min_zoom .. deep LOOP
        RETURN QUERY SELECT zz, t.x, t.y FROM geoingest_job_tiles_at(job_id, zz, buffer) t ORDER BY 2, 3;
    END LOOP;
END
$function$;
