-- Undoes 0046: the tables kept whole as history go back to copies in
-- feature_history, and the functions read feature_history alone again.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM geoingest_retired_tables LOOP
        EXECUTE format('INSERT INTO feature_history (retired_by, target_table, feature_id, layer, feature_index, properties, geom, area_m2)
                        SELECT $1, $2, coalesce(o.feature_id, o.id), o.layer, o.feature_index, o.properties, o.geom, o.area_m2
                        FROM geoingest_store.%I o', r.table_name) USING r.retired_by, r.target;
        EXECUTE format('DROP TABLE geoingest_store.%I', r.table_name);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_jobs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM feature_changes c USING gone g WHERE c.job_id = g.job_id;
    DELETE FROM feature_history h USING gone g WHERE h.retired_by = g.job_id;
    RETURN NULL;
END
$$;
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_jobs_deleted() SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
END
$$;

CREATE OR REPLACE FUNCTION geoingest_features_as_of(target text, at timestamp with time zone, bucket text DEFAULT NULL::text, key text DEFAULT NULL::text)
 RETURNS TABLE(source_bucket text, source_key text, pipeline_version text, job_id text, feature_id bigint, layer text, feature_index bigint, properties jsonb, geom geometry, area_m2 double precision)
 LANGUAGE plpgsql
 STABLE
AS $$
DECLARE
    s   record;
    j   record;
    cut bigint;
    gap bigint;
BEGIN
    FOR s IN SELECT DISTINCT c.source_bucket, c.source_key, c.pipeline_version FROM job_changes c
             WHERE c.target_table = target AND (bucket IS NULL OR c.source_bucket = bucket) AND (key IS NULL OR c.source_key = key)
    LOOP
        SELECT c.job_id, c.seq, jb.status INTO j FROM job_changes c JOIN jobs jb ON jb.job_id = c.job_id
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.applied_at <= at
        ORDER BY c.seq DESC LIMIT 1;
        IF NOT FOUND THEN
            -- Before the source's first record: nothing then, unless prune
            -- removed the records of that time.
            IF EXISTS (SELECT FROM job_changes c WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key
                       AND c.target_table = target AND c.pipeline_version = s.pipeline_version AND c.seq = 1) THEN
                CONTINUE;
            END IF;
            RAISE EXCEPTION 'source %/% (%): % is before its retained history (prune removed the older versions)',
                s.source_bucket, s.source_key, s.pipeline_version, at USING ERRCODE = 'data_exception';
        END IF;
        IF j.status = 'deleted' THEN
            CONTINUE;
        END IF;
        -- The records after J must all be there (prune removes the oldest
        -- first): a gap would make the answer wrong.
        SELECT count(*) - (max(c.seq) - j.seq) INTO gap FROM job_changes c
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq;
        IF gap <> 0 THEN
            RAISE EXCEPTION 'source %/% (%): its change records after % are not all retained', s.source_bucket, s.source_key, s.pipeline_version, at
                USING ERRCODE = 'data_exception';
        END IF;
        SELECT min(c.seq) INTO cut FROM job_changes c
        WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
          AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq AND c.base_job_id IS NULL;
        RETURN QUERY
        WITH later AS (SELECT c.job_id, c.seq FROM job_changes c
                       WHERE c.source_bucket = s.source_bucket AND c.source_key = s.source_key AND c.target_table = target
                         AND c.pipeline_version = s.pipeline_version AND c.seq > j.seq AND (cut IS NULL OR c.seq < cut)),
             touch AS (SELECT h.feature_id AS fid, l.seq, h.ctid AS hid FROM later l JOIN feature_history h ON h.retired_by = l.job_id
                       WHERE h.target_table = target
                       UNION ALL
                       SELECT fc.feature_id, l.seq, NULL::tid FROM later l JOIN feature_changes fc ON fc.job_id = l.job_id
                       WHERE fc.kind = 'added'),
             first AS (SELECT DISTINCT ON (t.fid) t.fid, t.hid FROM touch t ORDER BY t.fid, t.seq, t.hid NULLS LAST)
        SELECT s.source_bucket, s.source_key, s.pipeline_version, j.job_id, h.feature_id, h.layer, h.feature_index,
               h.properties, h.geom::geometry, h.area_m2
        FROM first f JOIN feature_history h ON h.ctid = f.hid
        UNION ALL
        SELECT s.source_bucket, s.source_key, s.pipeline_version, j.job_id, cur.feature_id, cur.layer, cur.feature_index,
               cur.properties, cur.geom, cur.area_m2
        FROM geoingest_features_current(target, s.source_bucket, s.source_key, s.pipeline_version) cur
        WHERE cut IS NULL AND NOT EXISTS (SELECT FROM touch t WHERE t.fid = cur.feature_id);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION geoingest_report_delta_cells(job_id text, admin_generation text, unit_ids bigint[], overlapping_units bigint[])
 RETURNS TABLE(unit_id bigint, pos_parcels bigint, pos_area_m2 double precision, int_parcels bigint, int_area_m2 double precision)
 LANGUAGE plpgsql
 STABLE
 SET jit TO 'off'
AS $$
#variable_conflict use_column
DECLARE
    base  text;
    ref   bigint;
    want  bigint;
    geoms geometry[];
    areas double precision[];
    signs int[];
BEGIN
    SELECT c.base_job_id, j.job_ref INTO base, ref
    FROM job_changes c JOIN jobs j ON j.job_id = c.job_id
    WHERE c.job_id = $1 AND c.target_table = 'parcels'
      AND EXISTS (SELECT 1 FROM sources s WHERE s.current_job_id = j.job_id AND s.target_table = 'parcels');
    IF base IS NULL OR NOT EXISTS (SELECT 1 FROM report_assignments r
                                   WHERE r.parcel_job_id = base AND r.admin_generation = $2) THEN
        RETURN;
    END IF;
    SELECT count(*) + count(*) FILTER (WHERE fc.kind <> 'added' AND fc.kind <> 'removed') INTO want
    FROM feature_changes fc
    WHERE fc.job_id = $1 AND fc.kind IN ('added', 'removed', 'geometry', 'geometry+attributes');
    IF want > (SELECT j.feature_count FROM jobs j WHERE j.job_id = $1) THEN
        RETURN; -- more parcels to count than the version has: computed whole instead
    END IF;
    SELECT coalesce(array_agg(x.geom), '{}'), coalesce(array_agg(x.area), '{}'), coalesce(array_agg(x.sign), '{}')
    INTO geoms, areas, signs
    FROM (
        -- the rows the job wrote: found through the GiST index by their
        -- new box, among the job's rows
        SELECT p.geom, p.area_m2 AS area, 1 AS sign
        FROM feature_changes fc
        CROSS JOIN LATERAL (SELECT p.geom, p.area_m2 FROM parcels p
                            WHERE p.job_ref = ref AND p.geom && fc.new_bbox::geometry
                              AND coalesce(p.feature_id, p.id) = fc.feature_id
                            LIMIT 1) p
        WHERE fc.job_id = $1 AND fc.kind IN ('added', 'geometry', 'geometry+attributes')
        UNION ALL
        -- the rows it retired, as the history kept them
        SELECT h.geom::geometry, h.area_m2, -1
        FROM feature_history h
        JOIN feature_changes fc ON fc.job_id = h.retired_by AND fc.feature_id = h.feature_id
        WHERE h.retired_by = $1 AND h.target_table = 'parcels'
          AND fc.kind IN ('removed', 'geometry', 'geometry+attributes')
    ) x;
    IF cardinality(geoms) <> want THEN
        RETURN; -- a row is missing: computed whole instead
    END IF;
    RETURN QUERY
    SELECT x.unit_id, sum(x.pos_parcels)::bigint, sum(x.pos_area_m2)::double precision,
           sum(x.int_parcels)::bigint, sum(x.int_area_m2)::double precision
    FROM (SELECT c.unit_id, c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
          FROM report_assignment_cells c
          WHERE c.parcel_job_id = base AND c.admin_generation = $2
          UNION ALL
          SELECT r.unit_id, r.pos_parcels, r.pos_area_m2, r.int_parcels, r.int_area_m2
          FROM geoingest_report_compute_rows(geoms, areas, signs, $3, $4) r) x
    GROUP BY x.unit_id
    HAVING sum(x.pos_parcels) <> 0 OR sum(x.int_parcels) <> 0
    ORDER BY x.unit_id;
END
$$;


DROP FUNCTION geoingest_upgrade_match_hashes(text, tid, int);
DROP FUNCTION geoingest_history();
DROP FUNCTION geoingest_history_rows(text, text);
DROP FUNCTION geoingest_retire_whole(text, bigint);
DROP TABLE geoingest_retired_tables;
