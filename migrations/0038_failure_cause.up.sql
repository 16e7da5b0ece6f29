-- Why a FAILED claim failed, as a code (ingest.Cause: crs,
-- invalid_geometry, null_geometry, wrong_type, incomplete_set, encoding,
-- payload_mismatch), set by the code that made the error and recorded
-- with the reason by FailClaim. The console's hint reads it instead of
-- the reason's words. '' for a failure with no known cause; NULL for a
-- claim failed before this migration, whose hint reads the reason as it
-- did.
ALTER TABLE claims ADD COLUMN IF NOT EXISTS failure_cause text;
