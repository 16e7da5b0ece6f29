DROP INDEX IF EXISTS sources_target_current_idx;
