-- Undoes 0039: the foreign keys back (NOT VALID: rows written meanwhile
-- are not checked again), the trigger gone.
DROP TRIGGER geoingest_jobs_deleted ON jobs;
DROP FUNCTION geoingest_jobs_deleted();
ALTER TABLE feature_changes ADD CONSTRAINT feature_changes_job_id_fkey
    FOREIGN KEY (job_id) REFERENCES jobs (job_id) ON DELETE CASCADE NOT VALID;
ALTER TABLE feature_history ADD CONSTRAINT feature_history_retired_by_fkey
    FOREIGN KEY (retired_by) REFERENCES jobs (job_id) ON DELETE CASCADE NOT VALID;
