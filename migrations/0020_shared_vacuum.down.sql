-- Back to migration 0012's setting: autovacuum reaches the
-- shared partitions at 5 % dead rows.
ALTER TABLE geoingest_store.parcels_shared SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE geoingest_store.admin_units_shared SET (autovacuum_vacuum_scale_factor = 0.05);
