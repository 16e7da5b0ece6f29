-- Folded partitions still waiting are dropped: their rows are in the
-- shared partition already.
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT table_name FROM geoingest_folded LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I', t);
    END LOOP;
END
$$;
DROP FUNCTION IF EXISTS geoingest_drop_folded();
DROP FUNCTION IF EXISTS geoingest_note_folded();
DROP FUNCTION IF EXISTS geoingest_fold_job(text);
DROP TABLE IF EXISTS geoingest_folded;
