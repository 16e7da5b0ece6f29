-- geoingest schema, version 39: the change records and the history are
-- written by the set, not checked row by row.
--
-- feature_changes.job_id and feature_history.retired_by referenced jobs
-- with a foreign key, and PostgreSQL checks a foreign key once per
-- inserted row (a lookup and a lock of the jobs row): some 4.6 us a row,
-- 9 s of CPU for a version of 1,000,000 parcels that all changed (one
-- change record and one history row each), most of what such a version
-- costs beyond a full load. Both are written only by the write gate's
-- functions (geoingest_diff_changes, geoingest_match_core,
-- geoingest_record_retire, geoingest_drop_job_features, the history
-- trigger), always for the gate's own job, whose ledger row the same
-- transaction inserted; so the keys go, and what the foreign keys' ON
-- DELETE CASCADE did is done by one statement-level trigger on jobs: the
-- rows of the jobs deleted (prune) go with them.

ALTER TABLE feature_changes DROP CONSTRAINT feature_changes_job_id_fkey;
ALTER TABLE feature_history DROP CONSTRAINT feature_history_retired_by_fkey;

CREATE FUNCTION geoingest_jobs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM feature_changes c USING gone g WHERE c.job_id = g.job_id;
    DELETE FROM feature_history h USING gone g WHERE h.retired_by = g.job_id;
    RETURN NULL;
END
$$;

-- Run with the owner's rights, as the cascade it replaces did; the
-- writer (whose prune deletes jobs) may run it, the analyst not.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_jobs_deleted() SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_jobs_deleted() FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_jobs_deleted() FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_jobs_deleted() TO geoingest_writer;
    END IF;
END
$$;

CREATE TRIGGER geoingest_jobs_deleted AFTER DELETE ON jobs
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION geoingest_jobs_deleted();
