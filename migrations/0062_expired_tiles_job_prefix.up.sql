-- geoingest schema, version 62: geoingest_expired_tiles names the job it
-- could not find.
--
-- The CLI prints a job's first 12 digits and takes a unique prefix of 8
-- or more wherever it takes a job id. geoingest_expired_tiles took only
-- the whole id: given the 12 digits a user copied from `geoingest jobs`,
-- it returned no tile, the empty list a tile cache reads as "nothing to
-- purge". Now a unique prefix stands for its job, as in the CLI; an
-- ambiguous prefix, an unknown job and a job without a change record
-- are errors that say which.

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
    found text[];
BEGIN
    IF NOT EXISTS (SELECT FROM job_changes c WHERE c.job_id = geoingest_expired_tiles.job_id) THEN
        -- Not a job with a change record: the unique prefix of one (the
        -- CLI prints a job's first 12 digits), else an error, never an
        -- empty list that a cache reads as "nothing to purge".
        IF geoingest_expired_tiles.job_id ~ '^[0-9a-f]{8,63}$' THEN
            SELECT array_agg(p.job_id ORDER BY p.job_id) INTO found
            FROM (SELECT c.job_id FROM job_changes c WHERE starts_with(c.job_id, geoingest_expired_tiles.job_id)
                  ORDER BY c.job_id LIMIT 3) p;
        END IF;
        IF cardinality(found) = 1 THEN
            job_id := found[1];
        ELSIF cardinality(found) > 1 THEN
            RAISE EXCEPTION 'job id prefix % is ambiguous: it starts % (give more of the id)', job_id,
                array_to_string(found[1:2], ', ') || CASE WHEN cardinality(found) > 2 THEN ', ...' ELSE '' END
                USING ERRCODE = 'invalid_parameter_value';
        ELSIF EXISTS (SELECT FROM jobs jb WHERE jb.job_id = geoingest_expired_tiles.job_id) THEN
            RAISE EXCEPTION 'job % has no change record: it wrote or retired no generation', job_id
                USING ERRCODE = 'no_data_found';
        ELSE
            RAISE EXCEPTION 'no job %: give a job id, or a unique prefix of one of at least 8 digits', job_id
                USING ERRCODE = 'no_data_found';
        END IF;
    END IF;
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
