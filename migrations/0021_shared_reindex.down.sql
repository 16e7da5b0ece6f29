DROP FUNCTION geoingest_note_index_build(text, double precision);
DROP FUNCTION geoingest_shared_indexes();
DROP TABLE geoingest_index_builds;
