DROP TRIGGER IF EXISTS geoingest_claim_updated ON claims;
DROP TRIGGER IF EXISTS geoingest_claim_inserted ON claims;
DROP FUNCTION IF EXISTS geoingest_claim_event();
DROP TABLE IF EXISTS claim_events;
DROP INDEX IF EXISTS sources_updated_idx;
DROP INDEX IF EXISTS claims_state_created_idx;
DROP INDEX IF EXISTS claims_created_idx;
ALTER TABLE jobs DROP COLUMN IF EXISTS write_seconds;
