-- Undoes 0029.
DROP FUNCTION geoingest_expired_tiles(text, int, int, bigint, double precision);
DROP FUNCTION geoingest_job_tile_count(text, int, double precision, bigint);
DROP FUNCTION geoingest_job_tiles_at(text, int, double precision);
DROP FUNCTION geoingest_job_tile_ranges(text, int, double precision);
DROP FUNCTION geoingest_job_boxes(text);
DROP FUNCTION geoingest_tile_v(double precision, int);
DROP FUNCTION geoingest_tile_u(double precision, int);
