-- Undoes 0053: geoingest_diff_changes back to work_mem 64MB.
ALTER FUNCTION geoingest_diff_changes(text, text, text, double precision, job_changes) SET work_mem TO '64MB';
