-- geoingest schema, version 29: the map tiles a job expired
-- (docs/changes.md, "Expired tiles").
--
-- geoingest_expired_tiles(job, min_zoom, max_zoom, max_tiles, buffer)
-- lists the z/x/y tiles (Web Mercator, the XYZ scheme of slippy maps and
-- of ST_TileEnvelope) that a tile cache must drop after the job: at each
-- zoom, the tiles that the old or the new envelope of any feature the job
-- added, removed or changed touches, each envelope widened by buffer (a
-- fraction of a tile: the buffer a tile server renders around each tile,
-- 64/4096 by default, as ST_AsMVT's default). An attribute change expires
-- the feature's tiles too: vector tiles carry the attributes. A job with
-- no feature rows in feature_changes (a source's first version, a
-- delete) expires the tiles of its extent (job_changes.bbox). The list is
-- computed from the change record when asked, so it costs the write gate
-- nothing and follows the record's retention (prune).
--
-- The cap: zoom by zoom from min_zoom, a zoom is listed only if the list
-- stays within max_tiles; the first zoom that does not fit ends the list.
-- So when the deepest zoom listed is below max_zoom, a cache must drop
-- the listed tiles of that deepest zoom with all their descendants. When
-- even min_zoom does not fit, the list is the deepest zoom below it that
-- fits (zoom 0 is one tile), to be read the same way.

-- geoingest_tile_u is a longitude's (or latitude's) position in tiles at
-- zoom z, from the west (or north) edge of the Web Mercator square.
CREATE FUNCTION geoingest_tile_u(lon double precision, z int) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (lon + 180.0) / 360.0 * (2.0 ^ z)
$$;

CREATE FUNCTION geoingest_tile_v(lat double precision, z int) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (1.0 - ln(tan(radians(c)) + 1.0 / cos(radians(c))) / pi()) / 2.0 * (2.0 ^ z)
    FROM (SELECT greatest(-85.0511287798066, least(85.0511287798066, lat))) l(c)
$$;

-- geoingest_job_boxes are the envelopes a job's tiles are expired by, in
-- EPSG:4326.
CREATE FUNCTION geoingest_job_boxes(job_id text)
RETURNS TABLE (minx double precision, miny double precision, maxx double precision, maxy double precision)
LANGUAGE sql STABLE AS $$
    SELECT ST_XMin(b), ST_YMin(b), ST_XMax(b), ST_YMax(b)
    FROM (SELECT c.old_bbox::geometry FROM feature_changes c WHERE c.job_id = $1 AND c.old_bbox IS NOT NULL
          UNION ALL
          SELECT c.new_bbox::geometry FROM feature_changes c WHERE c.job_id = $1 AND c.new_bbox IS NOT NULL
          UNION ALL
          SELECT jc.bbox::geometry FROM job_changes jc
          WHERE jc.job_id = $1 AND jc.bbox IS NOT NULL
            AND NOT EXISTS (SELECT FROM feature_changes c WHERE c.job_id = $1)) q(b)
$$;

-- geoingest_job_tile_ranges are the tile ranges of a job's boxes at zoom
-- z (inclusive, clamped to the square), each box widened by buffer tiles
-- and a hair more (a feature on a tile's edge is in both tiles).
CREATE FUNCTION geoingest_job_tile_ranges(job_id text, z int, buffer double precision)
RETURNS TABLE (x0 int, x1 int, y0 int, y1 int)
LANGUAGE sql STABLE AS $$
    SELECT greatest(0, floor(geoingest_tile_u(b.minx, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_u(b.maxx, z) + buffer + 1e-9))::int,
           greatest(0, floor(geoingest_tile_v(b.maxy, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_v(b.miny, z) + buffer + 1e-9))::int
    FROM geoingest_job_boxes(job_id) b
$$;

CREATE FUNCTION geoingest_job_tiles_at(job_id text, z int, buffer double precision)
RETURNS TABLE (x int, y int)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT tx, ty
    FROM geoingest_job_tile_ranges(job_id, z, buffer) r,
         generate_series(r.x0, r.x1) tx, generate_series(r.y0, r.y1) ty
$$;

CREATE FUNCTION geoingest_expired_tiles(job_id text, min_zoom int DEFAULT 0, max_zoom int DEFAULT 14,
                                        max_tiles bigint DEFAULT 100000,
                                        buffer double precision DEFAULT 64.0 / 4096)
RETURNS TABLE (z int, x int, y int)
LANGUAGE plpgsql STABLE AS $$
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
$$;

-- geoingest_job_tile_count is the count of a job's tiles at zoom z, or
-- NULL when it is over room: bounded first by the sum of its ranges'
-- sizes, which is an upper bound, so a zoom far over the cap is never
-- enumerated.
CREATE FUNCTION geoingest_job_tile_count(job_id text, z int, buffer double precision, room bigint)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    upper numeric;
    n     bigint;
BEGIN
    SELECT coalesce(sum((r.x1 - r.x0 + 1)::numeric * (r.y1 - r.y0 + 1)), 0) INTO upper
    FROM geoingest_job_tile_ranges(job_id, z, buffer) r;
    IF upper <= room THEN
        IF upper = 0 THEN
            RETURN 0;
        END IF;
    ELSIF upper > 16 * room THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO n FROM geoingest_job_tiles_at(job_id, z, buffer);
    IF n > room THEN
        RETURN NULL;
    END IF;
    RETURN n;
END
$$;
