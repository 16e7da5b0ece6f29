-- Undoes 0049: no raw-bytes prefilter.
DROP FUNCTION IF EXISTS geoingest_prefilter_send(text, bigint, boolean);
DROP FUNCTION IF EXISTS geoingest_prefilter_keep(text, bigint);
DROP FUNCTION IF EXISTS geoingest_prefilter_dedupe();
DROP FUNCTION IF EXISTS geoingest_prefilter_kept();
DROP FUNCTION IF EXISTS geoingest_prefilter_match(text, bigint, text[]);
DROP FUNCTION IF EXISTS geoingest_prefilter_create();
