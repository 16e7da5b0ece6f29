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
-- (migrations 0005 and 0014: the storage schema geoingest_store).
SELECT s.schema_name::text AS schema_name, s.table_name::text AS table_name
FROM geoingest_create_job_storage(@target_table::text, @job_ref::bigint) s;

-- name: InsertStagedFeatures :one
-- InsertStagedFeatures transforms the staged features to EPSG:4326 into the
-- job's table and returns how many rows it inserted.
SELECT geoingest_insert_staged(@target_table::text, @job_ref::bigint)::bigint AS inserted;

-- name: FinishJobTable :one
-- FinishJobTable repairs (or refuses) the features the writer found
-- invalid, measures and checks the rows it sent with no area
-- (server_check), summarises the job's rows and attaches its own
-- partition: see geoingest_finish_job_table (migration 0007).
SELECT f.written::bigint AS written, f.area_m2::float8 AS area_m2, f.features_checksum::text AS features_checksum,
       f.repaired::bigint AS repaired, f.collapsed::bigint AS collapsed
FROM geoingest_finish_job_table(@target_table::text, @job_ref::bigint, @repair::boolean,
                                @invalid::bigint[], @server_check::boolean) f;

-- name: DropJobFeatures :exec
-- DropJobFeatures removes a job's feature rows (its partition, or its rows
-- of the shared partition). Call it last in the transaction: dropping a
-- partition locks the target table until commit.
SELECT geoingest_drop_job_features(j.target_table, j.job_ref)
FROM jobs j WHERE j.job_id = @job_id;
