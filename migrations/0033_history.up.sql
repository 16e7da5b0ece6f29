-- geoingest schema, version 33: every version of a source stays
-- queryable as of a time, within the ledger's retention (docs/changes.md,
-- "History").
--
-- The current rows stay where they are (the read path is untouched): what
-- a version retires (a changed feature's old row, a removed feature, a
-- whole generation replaced or deleted) is copied into feature_history by
-- a trigger on the feature tables, in the write gate's transaction, so
-- exactly once with the job. The trigger copies only in a transaction
-- that named its retiring job (geoingest.history_job, set by the write
-- gate and by the approval of a pending version), so that the
-- compactor's moves (a DELETE of rows it has just inserted elsewhere) and
-- the rows a job drops of its own are not history.
--
-- job_changes gains seq, the version's position among its source's
-- change records (1, 2, ... in the order the source's row lock applied
-- them), and applied_at (the clock when it was recorded, in that order),
-- set by a trigger.
--
-- geoingest_features_as_of(target, at, bucket, key) is the rows of every
-- source (or one) as they were at that time: the source's version
-- current then (the last record applied by then), rebuilt from the
-- current rows and the history of the versions after it. A time before a
-- source's retained records (prune removes the oldest ledger rows, and
-- with them their records and the history they retired: ON DELETE
-- CASCADE) is an error, never a wrong answer.

ALTER TABLE job_changes ADD COLUMN seq bigint, ADD COLUMN applied_at timestamptz, ADD COLUMN pipeline_version text;

UPDATE job_changes jc SET seq = o.seq, applied_at = jc.recorded_at, pipeline_version = o.pipeline_version
FROM (SELECT c.job_id, j.pipeline_version,
             row_number() OVER (PARTITION BY c.source_bucket, c.source_key, c.target_table, j.pipeline_version
                                ORDER BY c.recorded_at, c.xid) AS seq
      FROM job_changes c JOIN jobs j ON j.job_id = c.job_id) o
WHERE o.job_id = jc.job_id;

CREATE UNIQUE INDEX job_changes_seq_idx ON job_changes (source_bucket, source_key, target_table, pipeline_version, seq);

CREATE FUNCTION geoingest_job_changes_seq() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT j.pipeline_version INTO NEW.pipeline_version FROM jobs j WHERE j.job_id = NEW.job_id;
    -- The source's row is locked by the writing gate: no other record of
    -- the source is being inserted meanwhile.
    SELECT coalesce(max(c.seq), 0) + 1 INTO NEW.seq FROM job_changes c
    WHERE c.source_bucket = NEW.source_bucket AND c.source_key = NEW.source_key
      AND c.target_table = NEW.target_table AND c.pipeline_version = NEW.pipeline_version;
    NEW.applied_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER job_changes_seq BEFORE INSERT ON job_changes
FOR EACH ROW EXECUTE FUNCTION geoingest_job_changes_seq();

-- feature_history: one row per feature row a version retired, with the
-- job that retired it. Its geometry keeps the domain
-- geoingest_internal_geometry (0017), so that GIS clients do not list it
-- as a layer.
CREATE TABLE feature_history (
    retired_by       text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    target_table     text NOT NULL,
    feature_id       bigint NOT NULL,
    layer            text,
    feature_index    bigint,
    properties       jsonb NOT NULL,
    geom             geoingest_internal_geometry,
    area_m2          double precision
);
CREATE INDEX feature_history_job_idx ON feature_history (retired_by, feature_id);

CREATE FUNCTION geoingest_capture_history() RETURNS trigger
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
        RETURN NULL; -- a row of the retiring job's own
    END IF;
    INSERT INTO feature_history (retired_by, target_table, feature_id, layer, feature_index, properties, geom, area_m2)
    VALUES (job, TG_ARGV[0], coalesce(OLD.feature_id, OLD.id), OLD.layer, OLD.feature_index, OLD.properties, OLD.geom, OLD.area_m2);
    RETURN NULL;
END
$$;

CREATE TRIGGER feature_history AFTER DELETE ON geoingest_store.parcels
FOR EACH ROW EXECUTE FUNCTION geoingest_capture_history('parcels');
CREATE TRIGGER feature_history AFTER DELETE ON geoingest_store.admin_units
FOR EACH ROW EXECUTE FUNCTION geoingest_capture_history('admin_units');

-- geoingest_features_as_of: the rows of target's sources (every source,
-- or the one of bucket and key) as they were at time at. For each source
-- (and pipeline version): J, its last record applied by then; if J was a
-- delete, nothing. Else each feature's version at J is, among the records
-- after J (each of which retired its old rows into feature_history), the
-- first that touched it: a retirement gives the row it retired; an
-- addition means the feature did not exist at J. A feature no later
-- record touched is its current row. A later record with no base (the
-- source's first version after a delete) ends the search: every row of
-- J's time was retired by then.
CREATE FUNCTION geoingest_features_as_of(target text, at timestamptz, bucket text DEFAULT NULL, key text DEFAULT NULL)
RETURNS TABLE (source_bucket text, source_key text, pipeline_version text, job_id text, feature_id bigint,
               layer text, feature_index bigint, properties jsonb, geom geometry, area_m2 double precision)
LANGUAGE plpgsql STABLE AS $$
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

-- geoingest_features_current is a source's current rows (of either
-- target), with their feature ids.
CREATE FUNCTION geoingest_features_current(target text, bucket text, key text, pipeline text)
RETURNS TABLE (feature_id bigint, layer text, feature_index bigint, properties jsonb, geom geometry, area_m2 double precision)
LANGUAGE sql STABLE AS $$
    SELECT p.feature_id, p.layer, p.feature_index, p.properties, p.geom, p.area_m2
    FROM sources s JOIN jobs j ON j.job_id = s.current_job_id JOIN parcels p ON p.job_ref = j.job_ref
    WHERE $1 = 'parcels' AND s.source_bucket = $2 AND s.source_key = $3
      AND s.target_table = 'parcels' AND s.pipeline_version = $4
    UNION ALL
    SELECT a.feature_id, a.layer, a.feature_index, a.properties, a.geom, a.area_m2
    FROM sources s JOIN jobs j ON j.job_id = s.current_job_id JOIN admin_units a ON a.job_ref = j.job_ref
    WHERE $1 = 'admin_units' AND s.source_bucket = $2 AND s.source_key = $3
      AND s.target_table = 'admin_units' AND s.pipeline_version = $4
$$;
