ALTER TABLE claims DROP COLUMN IF EXISTS failure_cause;
