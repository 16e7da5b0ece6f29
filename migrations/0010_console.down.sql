DROP INDEX IF EXISTS sources_updated_idx;
DROP INDEX IF EXISTS claims_state_created_idx;
DROP INDEX IF EXISTS claims_created_idx;
ALTER TABLE jobs DROP COLUMN IF EXISTS write_seconds;
