ALTER TABLE geoingest_store.parcels_shared ALTER COLUMN geom SET STATISTICS -1;
