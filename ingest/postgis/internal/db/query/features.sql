-- name: CreateStaging :exec
-- CreateStaging creates the per-transaction staging table that features in
-- a CRS other than EPSG:4326 are COPYed into before geoingest_insert_staged
-- transforms them into the job's table. It is dropped at commit or rollback.
CREATE TEMP TABLE geoingest_staging (
    feature_index bigint NOT NULL,
    layer         text NOT NULL,
    properties    jsonb NOT NULL,
    wkb           bytea NOT NULL
) ON COMMIT DROP;

-- name: CreateJobTable :one
-- CreateJobTable returns the table to COPY the job's features into, as
-- schema and name, creating it when the job has a partition of its own
-- (geoingest_create_job_storage: the storage schema geoingest_store;
-- defined by migrations 0014 and 0016, read as it is now in
-- migrations/schema/functions.sql).
SELECT s.schema_name::text AS schema_name, s.table_name::text AS table_name
FROM geoingest_create_job_storage(@target_table::text, @job_ref::bigint) s;

-- name: InsertStagedFeatures :one
-- InsertStagedFeatures transforms the staged features to EPSG:4326 into the
-- job's table and returns how many rows it inserted; a mapped job's typed
-- columns are cast from the records (migration 0036).
SELECT geoingest_insert_staged(@target_table::text, @job_ref::bigint, @mapped::boolean)::bigint AS inserted;

-- name: FinishJobTable :one
-- FinishJobTable repairs (or refuses) the features the writer found
-- invalid, measures and checks the rows it sent with no area
-- (server_check), summarises the job's rows and builds its own
-- partition's index: see geoingest_finish_job_table as it is now in
-- migrations/schema/functions.sql (defined by migrations 0005, 0007,
-- 0014 and 0016, and last by 0030: a feature with no area left after
-- repair goes to the quarantine under job_id, unless it is empty).
-- AttachJobTable attaches the partition.
SELECT f.written::bigint AS written, f.area_m2::float8 AS area_m2, f.features_checksum::text AS features_checksum,
       f.repaired::bigint AS repaired, f.collapsed::bigint AS collapsed
FROM geoingest_finish_job_table(@target_table::text, @job_ref::bigint, @repair::boolean,
                                @invalid::bigint[], @server_check::boolean, @job_id::text) f;

-- name: DropJobFeatures :exec
-- DropJobFeatures deletes a job's feature rows (of its own partition,
-- which the compactor drops later, or of the shared one): migration 0016.
SELECT geoingest_drop_job_features(j.target_table, j.job_ref)
FROM jobs j WHERE j.job_id = @job_id;

-- name: AttachJobTable :exec
-- AttachJobTable attaches the job's own table to the target as its
-- partition, under the target's ACCESS EXCLUSIVE lock (migration 0016):
-- the write gate's last statement before COMMIT.
SELECT geoingest_attach_job_table(@target_table::text, @job_ref::bigint);
