-- geoingest schema, version 20: autovacuum reaches the shared partitions
-- at 1 % dead rows (migration 0012 set 5 %).
--
-- A replacement writes the new generation before it deletes the old one,
-- in one transaction, so the old rows' space is reusable only after
-- autovacuum has vacuumed them. Below its threshold autovacuum leaves a
-- table alone: at 5 % a shared partition kept up to 5 % of its rows dead,
-- and the next publications, finding no free space, extended the heap past
-- them. Measured with the year simulation (four waves of publications a
-- month): the heap held 1.24x its live tuple bytes at 5 %, against 1.02x
-- freshly loaded. A vacuum at 1 % costs a scan of the partition's changed
-- pages and of its GiST index, about one for every 1 % of the rows
-- replaced.
ALTER TABLE geoingest_store.parcels_shared SET (autovacuum_vacuum_scale_factor = 0.01);
ALTER TABLE geoingest_store.admin_units_shared SET (autovacuum_vacuum_scale_factor = 0.01);
