-- geoingest schema, version 59: the expired tiles' cap counts a tile once,
-- however many changed features share it.
--
-- geoingest_job_tile_count bounds a zoom's tiles by the sum of its
-- ranges' sizes, and gave up on a zoom whose sum was over 16 times the
-- room left. But the ranges of many small features are the same tile:
-- 800 removed parcels make 800 ranges of the one tile at zoom 0, so with
-- expire-max-tiles=5 (room 5, 16 x 5 = 80 < 800) even zoom 0 "did not
-- fit", and a job that removed 800 parcels listed no tile at all (the
-- empty list a cache reads as "nothing to purge"). The ranges are now
-- distinct: identical ranges count (and are enumerated) once, so the
-- bound is the count of tiles wherever the features share their ranges
-- (zoom 0 is always one tile), and still never more than the sum.
CREATE OR REPLACE FUNCTION geoingest_job_tile_ranges(job_id text, z int, buffer double precision)
RETURNS TABLE (x0 int, x1 int, y0 int, y1 int)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT
           greatest(0, floor(geoingest_tile_u(b.minx, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_u(b.maxx, z) + buffer + 1e-9))::int,
           greatest(0, floor(geoingest_tile_v(b.maxy, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_v(b.miny, z) + buffer + 1e-9))::int
    FROM geoingest_job_boxes(job_id) b
$$;
