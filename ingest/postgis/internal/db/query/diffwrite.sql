-- name: CreateIncoming :exec
-- CreateIncoming creates the temporary table a new version of a source
-- with a current generation is copied into (migration 0026).
SELECT geoingest_create_incoming(@target_table::text);

-- name: InsertStagedIncoming :one
-- InsertStagedIncoming transforms the staged features to EPSG:4326 into
-- geoingest_incoming, under job_ref, and returns how many rows it
-- inserted.
SELECT geoingest_insert_staged_incoming(@job_ref::bigint)::bigint AS inserted;

-- name: FinishIncoming :one
-- FinishIncoming is FinishJobTable on geoingest_incoming: the version's
-- count, area and checksum as a full load would record them.
SELECT f.written::bigint AS written, f.area_m2::float8 AS area_m2, f.features_checksum::text AS features_checksum,
       f.repaired::bigint AS repaired, f.collapsed::bigint AS collapsed
FROM geoingest_finish_incoming(@repair::boolean, @invalid::bigint[], @server_check::boolean, @job_id::text) f;

-- name: ApplyIncoming :one
-- ApplyIncoming matches geoingest_incoming with the generation of
-- old_ref, records the changes and writes only what changed into that
-- generation's storage (migration 0026, geoingest_match_core).
SELECT m.added::bigint AS added, m.removed::bigint AS removed, m.geometry::bigint AS geometry,
       m.attributes::bigint AS attributes, m.unchanged::bigint AS unchanged,
       m.by_key::bigint AS by_key, m.by_content::bigint AS by_content, m.by_overlap::bigint AS by_overlap,
       m.duplicate_keys::bigint AS duplicate_keys, m.lineage::bigint AS lineage,
       coalesce(ST_AsGeoJSON(m.bbox::geometry, 7), '')::text AS bbox
FROM geoingest_apply_incoming(@target_table::text, @job_id::text, @base_job_id::text, @old_ref::bigint,
                              @key_fields::text[], @min_iou::float8) m;

-- name: SetJobRef :exec
-- SetJobRef moves a job's ledger row to another job_ref: the write gate
-- hands the replaced generation's ref (and so its rows) to the job that
-- replaces it, and the replaced job a fresh ref with no rows. The caller
-- holds the source's row lock.
UPDATE jobs SET job_ref = @job_ref WHERE job_id = @job_id;
