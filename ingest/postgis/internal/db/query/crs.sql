-- name: CustomCRSByHash :one
-- CustomCRSByHash is the SRID a custom CRS definition was registered under.
SELECT srid FROM custom_crs WHERE definition_sha256 = @definition_sha256;

-- name: LockCustomCRS :exec
-- LockCustomCRS serialises registrations of custom CRSs until the end of
-- the transaction, so two workers never take the same SRID nor register
-- one definition twice.
SELECT pg_advisory_xact_lock(hashtext('geoingest.custom_crs'));

-- name: RegisterCustomCRS :one
-- RegisterCustomCRS registers a CRS under the lowest SRID of geoingest's
-- range (990000-998999) that spatial_ref_sys does not use, in custom_crs
-- and in spatial_ref_sys: a custom one (auth_name 'GEOINGEST', epsg NULL)
-- or an EPSG one PostGIS lacks (auth_name 'EPSG', auth_srid its code). Run
-- it under LockCustomCRS, after CustomCRSByHash found nothing. No row: the
-- range is full.
WITH free AS (
    SELECT s.srid FROM generate_series(990000, 998999) AS s(srid)
    WHERE NOT EXISTS (SELECT 1 FROM spatial_ref_sys r WHERE r.srid = s.srid)
    ORDER BY s.srid LIMIT 1
), registered AS (
    INSERT INTO custom_crs (srid, definition_sha256, epsg, name, srtext, proj4text)
    SELECT free.srid, @definition_sha256, sqlc.narg(epsg)::int, @name, @srtext, @proj4text FROM free
    RETURNING custom_crs.srid, custom_crs.epsg
)
INSERT INTO spatial_ref_sys (srid, auth_name, auth_srid, srtext, proj4text)
SELECT registered.srid, CASE WHEN registered.epsg IS NULL THEN 'GEOINGEST' ELSE 'EPSG' END,
       coalesce(registered.epsg, registered.srid), @srtext, @proj4text FROM registered
RETURNING srid;

-- name: RecordJobCRS :exec
-- RecordJobCRS records the CRS one layer of a job was read in. It runs in
-- the write-gate transaction, after the job's ledger row is inserted,
-- with the layer's geometry field (when it has several) and the counts of
-- its features whose curves were linearised or whose Z/M were dropped.
INSERT INTO job_crs (job_id, layer, method, srid, epsg, confidence, crs_name, definition, transformation, source_text,
                     geometry_field, linearised_curves, dropped_zm)
VALUES (@job_id, @layer, @method, @srid, sqlc.narg(epsg), sqlc.narg(confidence), @crs_name, @definition, @transformation, @source_text,
        @geometry_field, @linearised_curves, @dropped_zm);

-- name: JobCRS :many
-- JobCRS lists the CRSs a job's layers were read in, with what was
-- changed of their geometries.
SELECT layer, method, srid, epsg, confidence, crs_name, definition, transformation, source_text,
       geometry_field, linearised_curves, dropped_zm
FROM job_crs WHERE job_id = @job_id ORDER BY layer;
