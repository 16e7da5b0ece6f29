-- geoingest schema, version 18: the shared partitions are scanned without
-- parallel workers.
--
-- A client that prepares its statements (pgx, JDBC and most map servers
-- after a few executions) runs a small-bbox query with a generic plan,
-- planned without the box. On a shared partition of a few million rows
-- that plan estimates enough rows for a parallel bitmap scan, and starting
-- its worker costs about 10 ms where the index scan takes 0.2-0.5 ms
-- (measured on 2M parcels, from the first load on). parallel_workers = 0
-- keeps such plans serial. What it costs: a query that reads a large part
-- of a shared partition (a roll-up over every parcel) runs on one core.
ALTER TABLE geoingest_store.parcels_shared SET (parallel_workers = 0);
ALTER TABLE geoingest_store.admin_units_shared SET (parallel_workers = 0);
