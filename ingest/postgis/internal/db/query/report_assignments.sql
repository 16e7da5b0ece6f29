-- Report assignments (migration 0006): what the area reports need from
-- each parcel job against the current admin generation of its pipeline
-- version, computed once, plus the admin-layer checks and the map.

-- name: StaleReportAssignments :many
-- StaleReportAssignments lists the current parcel jobs (all of them, or
-- only @job_id when it is not empty) that have no assignment to the
-- current admin generation of their pipeline version, with that
-- generation's name, admin jobs and unit ids.
WITH v AS (
    SELECT DISTINCT s.pipeline_version FROM sources s
    WHERE s.target_table = 'parcels' AND s.current_job_id IS NOT NULL
      AND (@job_id::text = '' OR s.current_job_id = @job_id::text)
), g AS MATERIALIZED (
    SELECT v.pipeline_version, x.job_ids, geoingest_generation_name(x.job_ids) AS gen,
           geoingest_admin_unit_ids(v.pipeline_version) AS unit_ids
    FROM v CROSS JOIN LATERAL (SELECT geoingest_admin_job_ids(v.pipeline_version) AS job_ids) x
)
SELECT s.current_job_id::text AS parcel_job_id, s.pipeline_version,
       g.gen::text AS admin_generation, g.job_ids::text[] AS admin_job_ids, g.unit_ids::bigint[] AS unit_ids
FROM sources s
JOIN g ON g.pipeline_version = s.pipeline_version
WHERE s.target_table = 'parcels' AND s.current_job_id IS NOT NULL
  AND (@job_id::text = '' OR s.current_job_id = @job_id::text)
  AND NOT EXISTS (SELECT 1 FROM report_assignments r
                  WHERE r.parcel_job_id = s.current_job_id AND r.admin_generation = g.gen)
ORDER BY s.pipeline_version, s.current_job_id;

-- name: PrepareReportAdmin :one
-- PrepareReportAdmin prepares an admin generation (migration 0015) unless
-- it is prepared already, and returns its overlapping units.
SELECT geoingest_report_prepare_admin(@admin_generation::text, @pipeline_version::text, @unit_ids::bigint[])::bigint[] AS overlapping_units;

-- name: CurrentAdminGenerations :many
-- CurrentAdminGenerations lists, for every pipeline version with current
-- admin units, its current admin generation and the units' ids.
SELECT v.pipeline_version::text AS pipeline_version,
       geoingest_generation_name(geoingest_admin_job_ids(v.pipeline_version))::text AS admin_generation,
       geoingest_admin_unit_ids(v.pipeline_version)::bigint[] AS unit_ids
FROM (SELECT DISTINCT s.pipeline_version FROM sources s
      WHERE s.target_table = 'admin_units' AND s.current_job_id IS NOT NULL) v
ORDER BY 1;

-- name: PruneReportAdminGenerations :execrows
-- PruneReportAdminGenerations deletes the prepared admin generations that
-- are no longer their version's current one (none comes back).
DELETE FROM report_admin_generations g
WHERE g.admin_generation <> geoingest_admin_generation(g.pipeline_version);

-- name: InsertReportAssignment :execrows
-- InsertReportAssignment is the gate of one refresh: a row touched means
-- this transaction computes the pair; none means it is computed already
-- (a concurrent refresh of the same pair blocks here until that one ends).
INSERT INTO report_assignments (parcel_job_id, admin_generation, pipeline_version, admin_job_ids)
VALUES (@parcel_job_id, @admin_generation, @pipeline_version, @admin_job_ids::text[])
ON CONFLICT (parcel_job_id, admin_generation) DO NOTHING;

-- name: InsertReportCells :one
-- InsertReportCells computes the pair's cells with geoingest_report_compute,
-- stores them, and records their point-on-surface totals and the time
-- taken on the pair's row, which it returns.
WITH ins AS (
    INSERT INTO report_assignment_cells (parcel_job_id, admin_generation, unit_id,
                                         pos_parcels, pos_area_m2, int_parcels, int_area_m2)
    SELECT @parcel_job_id::text, @admin_generation::text, c.unit_id,
           c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
    FROM geoingest_report_compute(@parcel_job_id::text, @unit_ids::bigint[], @overlapping_units::bigint[]) c
    RETURNING pos_parcels, pos_area_m2
)
UPDATE report_assignments r
SET parcels = (SELECT coalesce(sum(ins.pos_parcels), 0) FROM ins),
    area_m2 = (SELECT coalesce(sum(ins.pos_area_m2), 0) FROM ins),
    seconds = extract(epoch FROM clock_timestamp() - r.assigned_at)
WHERE r.parcel_job_id = @parcel_job_id::text AND r.admin_generation = @admin_generation::text
RETURNING r.parcels, r.area_m2;

-- name: InsertReportCellsNoUnits :one
-- InsertReportCellsNoUnits is InsertReportCells for an empty admin
-- generation: what geoingest_report_compute returns then (everything in
-- unit 0, the ledger's count and area), without planning its query.
WITH ins AS (
    INSERT INTO report_assignment_cells (parcel_job_id, admin_generation, unit_id,
                                         pos_parcels, pos_area_m2, int_parcels, int_area_m2)
    SELECT j.job_id, @admin_generation::text, 0, j.feature_count, j.total_area_m2, j.feature_count, j.total_area_m2
    FROM jobs j
    WHERE j.job_id = @parcel_job_id::text AND j.feature_count > 0
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels')
    RETURNING pos_parcels, pos_area_m2
)
UPDATE report_assignments r
SET parcels = (SELECT coalesce(sum(ins.pos_parcels), 0) FROM ins),
    area_m2 = (SELECT coalesce(sum(ins.pos_area_m2), 0) FROM ins),
    seconds = extract(epoch FROM clock_timestamp() - r.assigned_at)
WHERE r.parcel_job_id = @parcel_job_id::text AND r.admin_generation = @admin_generation::text
RETURNING r.parcels, r.area_m2;

-- name: PruneReportAssignments :execrows
-- PruneReportAssignments deletes the assignments that no report can use
-- any more: of a parcel job that is not current, or to an admin
-- generation that is not its version's current one. Neither comes back (a
-- job never becomes current again).
WITH g AS MATERIALIZED (
    SELECT v.pipeline_version, geoingest_admin_generation(v.pipeline_version) AS gen
    FROM (SELECT DISTINCT r.pipeline_version FROM report_assignments r) v
)
DELETE FROM report_assignments r
USING g
WHERE g.pipeline_version = r.pipeline_version
  AND (r.admin_generation <> g.gen
       OR NOT EXISTS (SELECT 1 FROM sources s
                      WHERE s.current_job_id = r.parcel_job_id AND s.target_table = 'parcels'
                        AND s.pipeline_version = r.pipeline_version));

-- name: DeleteReportAssignmentsOfJob :execrows
-- DeleteReportAssignmentsOfJob deletes a parcel job's assignments (when it
-- is replaced or retired).
DELETE FROM report_assignments WHERE parcel_job_id = @parcel_job_id;

-- name: ReportTotal :one
-- ReportTotal is what the ledger records for the current parcel jobs of a
-- pipeline version: their features and area on the spheroid (verify
-- checks both against the rows).
SELECT coalesce(sum(j.feature_count), 0)::bigint AS parcels,
       coalesce(sum(j.total_area_m2), 0)::float8 AS area_m2
FROM sources s
JOIN jobs j ON j.job_id = s.current_job_id
WHERE s.target_table = 'parcels' AND s.pipeline_version = @pipeline_version;

-- name: ReportUnitCells :many
-- ReportUnitCells is the report per admin unit (not per key value) of a
-- pipeline version: each current unit's id, key value and area, and the
-- parcels assigned to it by point on surface and by intersection; unit 0
-- (key '') holds what is in no unit. Ordered by unit id.
WITH c AS (
    SELECT x.unit_id, sum(x.pos_parcels) AS pos_n, sum(x.pos_area_m2) AS pos_area,
           sum(x.int_parcels) AS int_n, sum(x.int_area_m2) AS int_area
    FROM geoingest_report_cells(@pipeline_version::text) AS x (unit_id, pos_parcels, pos_area_m2, int_parcels, int_area_m2)
    GROUP BY x.unit_id
)
SELECT a.id AS unit_id, coalesce(geoingest_property(a.properties, @admin_key::text), '')::text AS admin_unit,
       ST_Area(a.geom::geography)::float8 AS unit_area_m2,
       coalesce(c.pos_n, 0)::bigint AS pos_parcels, coalesce(c.pos_area, 0)::float8 AS pos_area_m2,
       coalesce(c.int_n, 0)::bigint AS int_parcels, coalesce(c.int_area, 0)::float8 AS int_area_m2
FROM geoingest_current_admin_units a
LEFT JOIN c ON c.unit_id = a.id
WHERE a.pipeline_version = @pipeline_version::text
UNION ALL
SELECT 0, '', 0, c.pos_n::bigint, c.pos_area::float8, c.int_n::bigint, c.int_area::float8
FROM c WHERE c.unit_id = 0
ORDER BY 1;

-- name: AdminDuplicateKeys :many
SELECT d.admin_unit::text AS admin_unit, d.units::bigint AS units, d.unit_ids::bigint[] AS unit_ids
FROM geoingest_admin_duplicate_keys(@admin_key::text, @pipeline_version::text) d;

-- name: AdminOverlaps :many
SELECT o.unit_a::bigint AS unit_a, o.admin_unit_a::text AS admin_unit_a,
       o.unit_b::bigint AS unit_b, o.admin_unit_b::text AS admin_unit_b, o.area_m2::float8 AS area_m2
FROM geoingest_admin_overlaps(@admin_key::text, @pipeline_version::text) o;

-- name: ReportMapUnits :many
-- ReportMapUnits is each current admin unit of a pipeline version as an
-- SVG path (ST_AsSVG, absolute, 6 decimals: y is -latitude), with its
-- bounding box, ordered by id.
SELECT a.id AS unit_id, ST_AsSVG(a.geom, 0, 6)::text AS path,
       ST_XMin(a.geom)::float8 AS xmin, ST_YMin(a.geom)::float8 AS ymin,
       ST_XMax(a.geom)::float8 AS xmax, ST_YMax(a.geom)::float8 AS ymax
FROM geoingest_current_admin_units a
WHERE a.pipeline_version = @pipeline_version::text
ORDER BY a.id;

-- name: VerifyReportAssignments :many
-- VerifyReportAssignments lists, for every current parcel job, whether it
-- is assigned to its version's current admin generation and, if so, the
-- totals of its point-on-surface cells, beside the ledger's.
WITH g AS (
    SELECT v.pipeline_version, geoingest_admin_generation(v.pipeline_version) AS gen
    FROM (SELECT DISTINCT s.pipeline_version FROM sources s WHERE s.target_table = 'parcels') v
)
SELECT j.job_id, j.pipeline_version, j.feature_count AS ledger_count, j.total_area_m2 AS ledger_area_m2,
       (r.parcel_job_id IS NOT NULL)::boolean AS assigned,
       coalesce((SELECT sum(c.pos_parcels) FROM report_assignment_cells c
                 WHERE c.parcel_job_id = r.parcel_job_id AND c.admin_generation = r.admin_generation), 0)::bigint AS cell_count,
       coalesce((SELECT sum(c.pos_area_m2) FROM report_assignment_cells c
                 WHERE c.parcel_job_id = r.parcel_job_id AND c.admin_generation = r.admin_generation), 0)::float8 AS cell_area_m2
FROM sources s
JOIN jobs j ON j.job_id = s.current_job_id
JOIN g ON g.pipeline_version = s.pipeline_version
LEFT JOIN report_assignments r ON r.parcel_job_id = j.job_id AND r.admin_generation = g.gen
WHERE s.target_table = 'parcels'
ORDER BY j.job_id;

-- name: PreparedAdminGeneration :many
-- PreparedAdminGeneration is the current admin generation of a pipeline
-- version if it is prepared (migration 0015): its name, units, the units
-- that overlap another, and the union of the units as WKB (NULL when GEOS
-- could not compute it). No row when there is none or it is not prepared
-- yet: a write never waits for an admin layer's preparation.
SELECT g.admin_generation, g.unit_ids, g.overlapping_units, ST_AsBinary(g.coverage)::bytea AS coverage
FROM report_admin_generations g
WHERE g.admin_generation = geoingest_admin_generation(@pipeline_version::text)
  AND g.pipeline_version = @pipeline_version::text;

-- name: AdminUnitGeometries :many
-- AdminUnitGeometries is the geometry (WKB) of each admin unit of ids, by id.
SELECT a.id::bigint AS id, ST_AsBinary(a.geom)::bytea AS wkb
FROM admin_units a
WHERE a.id = ANY (@ids::bigint[])
ORDER BY a.id;

-- name: InsertReportCellsGiven :one
-- InsertReportCellsGiven is InsertReportCells with the cells computed by
-- the writer (ingest/reportcells) while the job streamed, given as
-- arrays by unit; nothing is inserted unless the job is current and the
-- cells count exactly the ledger's features.
WITH c AS (
    -- the arrays zipped (set-returning functions in a select list run in
    -- lockstep)
    SELECT unnest(@unit_ids::bigint[]) AS unit_id, unnest(@pos_parcels::bigint[]) AS pos_parcels,
           unnest(@pos_area_m2::float8[]) AS pos_area_m2, unnest(@int_parcels::bigint[]) AS int_parcels,
           unnest(@int_area_m2::float8[]) AS int_area_m2
), ok AS (
    SELECT 1 FROM jobs j
    WHERE j.job_id = @parcel_job_id::text
      AND j.feature_count = (SELECT coalesce(sum(c.pos_parcels), 0) FROM c)
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels')
), ins AS (
    INSERT INTO report_assignment_cells (parcel_job_id, admin_generation, unit_id,
                                         pos_parcels, pos_area_m2, int_parcels, int_area_m2)
    SELECT @parcel_job_id::text, @admin_generation::text, c.unit_id,
           c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
    FROM c WHERE EXISTS (SELECT 1 FROM ok)
    RETURNING pos_parcels, pos_area_m2
)
UPDATE report_assignments r
SET parcels = (SELECT coalesce(sum(ins.pos_parcels), 0) FROM ins),
    area_m2 = (SELECT coalesce(sum(ins.pos_area_m2), 0) FROM ins),
    seconds = extract(epoch FROM clock_timestamp() - r.assigned_at)
WHERE r.parcel_job_id = @parcel_job_id::text AND r.admin_generation = @admin_generation::text
  AND EXISTS (SELECT 1 FROM ok)
RETURNING r.parcels, r.area_m2;

-- name: InsertReportCellsDelta :one
-- InsertReportCellsDelta is InsertReportCells for a version that replaced
-- its base by a change record (migration 0041): its cells are its base's
-- to the same generation, less the rows it retired, plus the rows it
-- wrote, of the features whose geometry changed, added or removed. No
-- row, and nothing stored, when they cannot be had that way or do not
-- count exactly the ledger's features: the pair is then computed whole.
WITH c AS MATERIALIZED (
    SELECT d.unit_id, d.pos_parcels, d.pos_area_m2, d.int_parcels, d.int_area_m2
    FROM geoingest_report_delta_cells(@parcel_job_id::text, @admin_generation::text,
                                      @unit_ids::bigint[], @overlapping_units::bigint[])
         AS d (unit_id, pos_parcels, pos_area_m2, int_parcels, int_area_m2)
), ok AS (
    SELECT 1 FROM jobs j
    WHERE j.job_id = @parcel_job_id::text AND EXISTS (SELECT 1 FROM c)
      AND j.feature_count = (SELECT coalesce(sum(c.pos_parcels), 0) FROM c)
), ins AS (
    INSERT INTO report_assignment_cells (parcel_job_id, admin_generation, unit_id,
                                         pos_parcels, pos_area_m2, int_parcels, int_area_m2)
    SELECT @parcel_job_id::text, @admin_generation::text, c.unit_id,
           c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
    FROM c WHERE EXISTS (SELECT 1 FROM ok)
    RETURNING pos_parcels, pos_area_m2
)
UPDATE report_assignments r
SET parcels = (SELECT coalesce(sum(ins.pos_parcels), 0) FROM ins),
    area_m2 = (SELECT coalesce(sum(ins.pos_area_m2), 0) FROM ins),
    seconds = extract(epoch FROM clock_timestamp() - r.assigned_at)
WHERE r.parcel_job_id = @parcel_job_id::text AND r.admin_generation = @admin_generation::text
  AND EXISTS (SELECT 1 FROM ok)
RETURNING r.parcels, r.area_m2;

-- name: HasReportAssignment :one
-- HasReportAssignment is whether a parcel job has cells to an admin
-- generation.
SELECT EXISTS (SELECT 1 FROM report_assignments r
               WHERE r.parcel_job_id = @parcel_job_id::text AND r.admin_generation = @admin_generation::text)::boolean AS assigned;
