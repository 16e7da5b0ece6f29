DROP FUNCTION geoingest_finish_incoming(boolean, bigint[], boolean, text);
DROP FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text);
ALTER TABLE jobs DROP COLUMN quarantined;
DROP TABLE geoingest_quarantine;
