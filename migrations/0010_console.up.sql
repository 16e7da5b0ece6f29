-- geoingest schema, version 10: what the operator's console reads.
--
-- * jobs.write_seconds: how long a job's write-gate transaction took,
--   from its first statement (committed_at is that statement's now()) to
--   the ledger's last update (FinishJob, by clock_timestamp()). NULL for
--   jobs that wrote no features and for jobs written before version 10.
-- * Indexes for the console's pages, which list jobs newest claim first
--   (keyset pagination on (created_at, job_id)), optionally of one claim
--   state, and sources most recently changed first: each page reads its
--   rows off an index whatever the number of jobs.
ALTER TABLE jobs ADD COLUMN write_seconds double precision;

CREATE INDEX claims_created_idx ON claims (created_at, job_id);
CREATE INDEX claims_state_created_idx ON claims (state, created_at, job_id);
CREATE INDEX sources_updated_idx ON sources (updated_at, source_bucket, source_key, target_table, pipeline_version);
