-- Undoes 0025: the changelog, the matcher, the feature ids.
DROP FUNCTION geoingest_record_retire(text, text, text, bigint);
DROP FUNCTION geoingest_match_generation(text, text, text, bigint, bigint, text[], double precision);
DROP VIEW geoingest_changes;
DROP TABLE feature_lineage;
DROP TABLE feature_changes;
DROP TABLE job_changes;
DROP FUNCTION geoingest_key_value(jsonb, text[]);

CREATE OR REPLACE FUNCTION geoingest_fold_job(job_id text, OUT new_ref bigint, OUT moved bigint)
LANGUAGE plpgsql AS $$
DECLARE
    j      record;
    own    text;
    shared text;
    n      bigint;
    area   double precision;
    sum    text;
BEGIN
    moved := 0;
    SELECT jobs.job_ref, jobs.target_table, jobs.status, jobs.feature_count, jobs.total_area_m2, jobs.features_checksum
    INTO j FROM jobs WHERE jobs.job_id = geoingest_fold_job.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    new_ref := j.job_ref;
    IF j.status <> 'current' OR j.job_ref <= 0 THEN
        RETURN;
    END IF;
    own := geoingest_job_table(j.target_table, j.job_ref);
    shared := geoingest_job_table(j.target_table, -1);
    new_ref := -nextval('geoingest_job_ref_seq');
    EXECUTE format('WITH ins AS (INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2)
                                 SELECT id, $1, feature_index, layer, properties, geom, area_m2 FROM geoingest_store.%I
                                 RETURNING feature_index, properties, geom, area_m2)
                    SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM ins', shared, own)
        INTO n, area, sum USING new_ref;
    IF n <> j.feature_count OR sum <> j.features_checksum
       OR abs(area - j.total_area_m2) > 1e-9 * greatest(abs(area), abs(j.total_area_m2)) THEN
        RAISE EXCEPTION 'job %: its % rows (area %, checksum %) do not match the ledger (% features, area %, checksum %): not folded; run geoingest verify',
            geoingest_fold_job.job_id, n, area, sum, j.feature_count, j.total_area_m2, j.features_checksum
            USING ERRCODE = 'data_exception';
    END IF;
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_fold_job.job_id;
    EXECUTE format('DELETE FROM geoingest_store.%I', own);
    INSERT INTO geoingest_folded (table_name, target, job_id, old_ref, new_ref, rows)
    VALUES (own, j.target_table, geoingest_fold_job.job_id, j.job_ref, new_ref, n);
    moved := n;
END
$$;

-- The views lose their feature_id column: dropped and created again as
-- 0014, 0023 and 0006 left them (with the same rights), the view that
-- depends on them first.
DROP VIEW geoingest_report_parcels;
DROP VIEW geoingest_current_parcels;
DROP VIEW geoingest_current_admin_units;
DROP VIEW parcels;
DROP VIEW admin_units;
ALTER TABLE geoingest_store.parcels DROP COLUMN feature_id;
ALTER TABLE geoingest_store.admin_units DROP COLUMN feature_id;
CREATE VIEW parcels AS SELECT * FROM geoingest_store.parcels;
CREATE VIEW admin_units AS SELECT * FROM geoingest_store.admin_units;
COMMENT ON VIEW parcels IS 'Every parcel of every generation geoingest holds (join jobs on job_ref, or read geoingest_current_parcels for the current generations only).';
COMMENT ON VIEW admin_units IS 'Every admin unit of every generation geoingest holds (join jobs on job_ref, or read geoingest_current_admin_units for the current generations only).';
CREATE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2
FROM geoingest_store.parcels p
LEFT JOIN jobs j ON j.job_ref = p.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';
CREATE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2
FROM geoingest_store.admin_units a
LEFT JOIN jobs j ON j.job_ref = a.job_ref
LEFT JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';
CREATE VIEW geoingest_report_parcels AS
SELECT p.id, p.job_id, p.geom, p.area_m2::double precision AS area_m2 FROM geoingest_current_parcels p;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON parcels, admin_units TO geoingest_writer;
        GRANT SELECT ON geoingest_current_parcels, geoingest_current_admin_units, geoingest_report_parcels TO geoingest_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        GRANT SELECT ON parcels, admin_units, geoingest_current_parcels, geoingest_current_admin_units,
                        geoingest_report_parcels TO geoingest_analyst;
    END IF;
END
$$;
