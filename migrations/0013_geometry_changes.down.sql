ALTER TABLE job_crs
    DROP COLUMN IF EXISTS dropped_zm,
    DROP COLUMN IF EXISTS linearised_curves,
    DROP COLUMN IF EXISTS geometry_field;

ALTER TABLE jobs
    DROP COLUMN IF EXISTS dropped_zm,
    DROP COLUMN IF EXISTS linearised_curves;
