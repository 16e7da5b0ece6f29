-- Back to version 17: the shared partitions take the planner's default
-- number of parallel workers again.
ALTER TABLE geoingest_store.parcels_shared RESET (parallel_workers);
ALTER TABLE geoingest_store.admin_units_shared RESET (parallel_workers);
