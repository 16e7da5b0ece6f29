-- Undoes 0039: feature_history's foreign key and index as 0033 made them.
DROP TRIGGER feature_history_cascade ON jobs;
DROP FUNCTION geoingest_history_cascade();
DELETE FROM feature_history h WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.job_id = h.retired_by);
ALTER TABLE feature_history ADD CONSTRAINT feature_history_retired_by_fkey
    FOREIGN KEY (retired_by) REFERENCES jobs (job_id) ON DELETE CASCADE;
DROP INDEX feature_history_retired_idx;
CREATE INDEX feature_history_job_idx ON feature_history (retired_by, feature_id);
