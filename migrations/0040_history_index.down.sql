-- Undoes 0040: feature_history's index as 0033 made it.
DROP INDEX feature_history_retired_idx;
CREATE INDEX feature_history_job_idx ON feature_history (retired_by, feature_id);
