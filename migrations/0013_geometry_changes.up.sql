-- geoingest schema, version 13: what a reader changed of the geometries
-- it gave, recorded per job and per layer beside the policy counts.
--
-- jobs.linearised_curves counts the job's features whose curves (arcs,
-- curve polygons, multi-surfaces) were approximated by line segments;
-- jobs.dropped_zm those whose Z or M coordinates were dropped. Both are
-- written with the job's other counts (skipped_null, skipped_type,
-- repaired_invalid), in the write-gate transaction.
--
-- job_crs, one row per layer of a written job, gets the same two counts
-- for that layer and the geometry field read when the layer has several
-- ('' otherwise). Jobs written before this version have zeros and ''.
ALTER TABLE jobs
    ADD COLUMN linearised_curves bigint NOT NULL DEFAULT 0,
    ADD COLUMN dropped_zm        bigint NOT NULL DEFAULT 0;

ALTER TABLE job_crs
    ADD COLUMN geometry_field    text NOT NULL DEFAULT '',
    ADD COLUMN linearised_curves bigint NOT NULL DEFAULT 0,
    ADD COLUMN dropped_zm        bigint NOT NULL DEFAULT 0;
