-- Undoes 0059: geoingest_job_tile_ranges as in 0029 (one range per box).
CREATE OR REPLACE FUNCTION geoingest_job_tile_ranges(job_id text, z int, buffer double precision)
RETURNS TABLE (x0 int, x1 int, y0 int, y1 int)
LANGUAGE sql STABLE AS $$
    SELECT greatest(0, floor(geoingest_tile_u(b.minx, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_u(b.maxx, z) + buffer + 1e-9))::int,
           greatest(0, floor(geoingest_tile_v(b.maxy, z) - buffer - 1e-9))::int,
           least((2 ^ z)::bigint - 1, floor(geoingest_tile_v(b.miny, z) + buffer + 1e-9))::int
    FROM geoingest_job_boxes(job_id) b
$$;
