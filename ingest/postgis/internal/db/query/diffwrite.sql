-- name: CreateIncoming :exec
-- CreateIncoming creates the temporary table a new version of a source
-- with a current generation is copied into (migration 0026).
SELECT geoingest_create_incoming(@target_table::text);

-- name: InsertStagedIncoming :one
-- InsertStagedIncoming transforms the staged features to EPSG:4326 into
-- geoingest_incoming, under job_ref, and returns how many rows it
-- inserted; a mapped job's typed columns are cast from the records
-- (migration 0036).
SELECT geoingest_insert_staged_incoming(@job_ref::bigint, @target_table::text, @mapped::boolean)::bigint AS inserted;

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

-- name: CreateVersion :exec
-- CreateVersion creates the temporary table of a new version's match
-- columns (migration 0029, geoingest_create_version).
SELECT geoingest_create_version();

-- name: VersionAddStaged :one
-- VersionAddStaged lists the rows the server transformed into
-- geoingest_incoming in the version's match columns, to be computed there.
SELECT geoingest_version_add_staged()::bigint AS added;

-- name: Spooled :many
-- Spooled lists where the writer's spool holds the rows to send whole:
-- what is 'must', 'write' or 'all' (geoingest_spooled), in spool order,
-- at most n past the offset after.
SELECT s.spool_off::bigint AS spool_off, s.spool_len::int AS spool_len
FROM geoingest_spooled(@what::text, @after::bigint, @n::int) s;

-- name: VersionSync :one
-- VersionSync takes the checked rows' area and match columns from
-- geoingest_incoming and returns the version's count and area.
SELECT v.written::bigint AS written, v.area_m2::float8 AS area_m2 FROM geoingest_version_sync(@key_fields::text[]) v;

-- name: DiffPlan :one
-- DiffPlan matches the version's match columns with the generation of
-- old_ref by key and by content (geoingest_diff_plan); with skip_kept, the
-- pairs kept by their bytes that the prefilter left out of the version
-- stay out of the match, counted as unchanged key pairs (migration 0050).
SELECT p.total::bigint AS total, p.to_write::bigint AS to_write, p.duplicate_keys::bigint AS duplicate_keys
FROM geoingest_diff_plan(@target_table::text, @old_ref::bigint, @key_fields::text[], @skip_kept::boolean) p;

-- name: DiffApply :one
-- DiffApply finishes the match, records the changes and writes only what
-- changed into the generation of old_ref (geoingest_diff_apply).
SELECT m.added::bigint AS added, m.removed::bigint AS removed, m.geometry::bigint AS geometry,
       m.attributes::bigint AS attributes, m.unchanged::bigint AS unchanged,
       m.by_key::bigint AS by_key, m.by_content::bigint AS by_content, m.by_overlap::bigint AS by_overlap,
       m.duplicate_keys::bigint AS duplicate_keys, m.lineage::bigint AS lineage,
       coalesce(ST_AsGeoJSON(m.bbox::geometry, 7), '')::text AS bbox
FROM geoingest_diff_apply(@job_id::text, @base_job_id::text, @target_table::text, @old_ref::bigint, @min_iou::float8,
                          @duplicate_keys::bigint, @new_ref::bigint) m;

-- name: SetJobChecksum :exec
-- SetJobChecksum records a job's checksum (a held version's, summed once
-- its rows are all in its table).
UPDATE jobs SET features_checksum = @features_checksum WHERE job_id = @job_id;

-- name: DiffRewriteList :one
-- DiffRewriteList lists the spooled rows of a version written straight
-- into its own table, with their feature ids (migration 0037,
-- geoingest_diff_rewrite_list), and returns how many.
SELECT geoingest_diff_rewrite_list()::bigint AS listed;

-- name: DiffRewritePage :many
-- DiffRewritePage is the next page of that list: at most n rows past the
-- spool offset after, in spool order; fid 0 is an added row (no predecessor).
SELECT w.spool_off::bigint AS spool_off, w.spool_len::int AS spool_len, coalesce(w.fid, 0)::bigint AS fid
FROM geoingest_diff_rewrite_page(@after::bigint, @n::int) AS w(spool_off, spool_len, fid);

-- name: DiffApplyDirect :one
-- DiffApplyDirect finishes a version written straight into its own table
-- (geoingest_diff_apply_direct): the changes recorded, the table summed
-- and indexed.
SELECT m.added::bigint AS added, m.removed::bigint AS removed, m.geometry::bigint AS geometry,
       m.attributes::bigint AS attributes, m.unchanged::bigint AS unchanged,
       m.by_key::bigint AS by_key, m.by_content::bigint AS by_content, m.by_overlap::bigint AS by_overlap,
       m.duplicate_keys::bigint AS duplicate_keys, m.lineage::bigint AS lineage,
       coalesce(ST_AsGeoJSON(m.bbox::geometry, 7), '')::text AS bbox
FROM geoingest_diff_apply_direct(@job_id::text, @base_job_id::text, @target_table::text, @old_ref::bigint, @min_iou::float8,
                                 @duplicate_keys::bigint, @new_ref::bigint) m;

-- name: HashProbe :one
-- HashProbe is the server's hash of a fixed text (migration 0044), which
-- the writer compares with its own twin's (serverHashesAgree).
SELECT geoingest_hash_probe()::bigint AS probe;

-- name: PrefilterCreate :exec
-- PrefilterCreate creates the temporary table a version's raw hashes are
-- copied into (migration 0049, the raw-bytes prefilter).
SELECT geoingest_prefilter_create();

-- name: PrefilterMatch :one
-- PrefilterMatch finds the version's features whose raw hash is a row's of
-- the generation of old_ref (geoingest_prefilter_match, one pass over its
-- rows, which also lists the match's old side: migration 0051): how many
-- hashes were copied (@copied, as the writer counted them), and how many
-- of those features were found.
SELECT m.total::bigint AS total, m.kept::bigint AS kept
FROM geoingest_prefilter_match(@target_table::text, @old_ref::bigint, @key_fields::text[], @copied::bigint) m;

-- name: PrefilterKept :many
-- PrefilterKept lists the indexes of the features kept by their bytes.
SELECT k::bigint AS fi FROM geoingest_prefilter_kept() k;

-- name: PrefilterUnkept :many
-- PrefilterUnkept lists the indexes of the features whose raw hashes were
-- copied and that were not kept (migration 0051): the reader skips all the
-- others, when these are fewer.
SELECT k::bigint AS fi FROM geoingest_prefilter_unkept() k;

-- name: PrefilterKeep :one
-- PrefilterKeep lists the kept features in the version's match columns,
-- but the bypass pairs (left out of the match, migrations 0050, 0051); the count,
-- area and extent of all, the count and area of those left out.
SELECT k.kept::bigint AS kept, coalesce(k.area_m2, 0)::float8 AS area_m2,
       coalesce(k.min_x, 'NaN')::float8 AS min_x, coalesce(k.min_y, 'NaN')::float8 AS min_y,
       coalesce(k.max_x, 'NaN')::float8 AS max_x, coalesce(k.max_y, 'NaN')::float8 AS max_y,
       k.bypassed::bigint AS bypassed, k.bypassed_area::float8 AS bypassed_area
FROM geoingest_prefilter_keep(@target_table::text, @old_ref::bigint, @base_box::float8[]) k;

-- name: PrefilterSend :one
-- PrefilterSend copies kept features from their rows into
-- geoingest_incoming: all of them (every_one), or those the match added or
-- changed.
SELECT geoingest_prefilter_send(@target_table::text, @old_ref::bigint, @every_one::boolean)::bigint AS sent;

-- name: SourceJobKeys :many
-- SourceJobKeys is the property keys recorded for each version of a
-- source (geoingest_job_stats): every row of the source was read by one of
-- them.
SELECT s.keys FROM geoingest_job_stats s JOIN jobs j ON j.job_id = s.job_id
WHERE j.source_bucket = @source_bucket AND j.source_key = @source_key AND j.target_table = @target_table;

-- name: SourceDroppedCoordinates :one
-- SourceDroppedCoordinates reports whether a version of a source ever had
-- curves linearised or Z/M coordinates dropped.
SELECT EXISTS (SELECT FROM jobs j WHERE j.source_bucket = @source_bucket AND j.source_key = @source_key
               AND j.target_table = @target_table AND (j.dropped_zm > 0 OR j.linearised_curves > 0)) AS dropped;
