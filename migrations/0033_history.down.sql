-- Undoes 0032.
DROP FUNCTION geoingest_features_as_of(text, timestamptz, text, text);
DROP FUNCTION geoingest_features_current(text, text, text, text);
DROP TRIGGER feature_history ON geoingest_store.parcels;
DROP TRIGGER feature_history ON geoingest_store.admin_units;
DROP FUNCTION geoingest_capture_history();
DROP TABLE feature_history;
DROP TRIGGER job_changes_seq ON job_changes;
DROP FUNCTION geoingest_job_changes_seq();
DROP INDEX job_changes_seq_idx;
ALTER TABLE job_changes DROP COLUMN seq, DROP COLUMN applied_at, DROP COLUMN pipeline_version;
