DROP FUNCTION geoingest_pend_incoming(text, bigint);
DROP FUNCTION geoingest_incoming_extent();
DROP FUNCTION geoingest_pending_rows(text, bigint);
DROP FUNCTION geoingest_drop_pending_table(text, bigint);
DROP FUNCTION geoingest_pend_job_table(text, text, bigint, bigint);
DROP FUNCTION geoingest_job_extent(text, bigint);
DROP TABLE geoingest_guard_events;
DROP TABLE geoingest_job_stats;
UPDATE jobs SET status = 'superseded' WHERE status IN ('pending', 'rejected');
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('current', 'superseded', 'replaced', 'retired', 'deleted'));
