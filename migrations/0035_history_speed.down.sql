-- Undoes 0035: the history trigger as 0033 made it (the tile functions
-- stay: the same results as 0029's, faster).
CREATE OR REPLACE FUNCTION geoingest_capture_history() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    job text := current_setting('geoingest.history_job', true);
    ref bigint;
BEGIN
    IF job IS NULL OR job = '' THEN
        RETURN NULL;
    END IF;
    SELECT j.job_ref INTO ref FROM jobs j WHERE j.job_id = job;
    IF NOT FOUND OR OLD.job_ref = ref THEN
        RETURN NULL;
    END IF;
    INSERT INTO feature_history (retired_by, target_table, feature_id, layer, feature_index, properties, geom, area_m2)
    VALUES (job, TG_ARGV[0], coalesce(OLD.feature_id, OLD.id), OLD.layer, OLD.feature_index, OLD.properties, OLD.geom, OLD.area_m2);
    RETURN NULL;
END
$$;
