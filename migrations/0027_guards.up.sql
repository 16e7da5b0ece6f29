-- Guards: a version that looks wrong is held as a pending generation, not
-- applied (ingest/guard.go, ingest/postgis/pending.go).
--
-- A pending job's ledger row has status 'pending' and its features are in
-- a table of its own, geoingest_store.<target>_job_<ref> with a positive
-- ref, that is NOT attached to the target: readers never see it. An
-- approval attaches it in the transaction that makes the job current; a
-- rejection (or a newer version of the source) drops it, and the job's
-- status becomes 'rejected' (or 'superseded').
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('current', 'superseded', 'replaced', 'retired', 'deleted', 'pending', 'rejected'));

-- geoingest_job_stats: what the guards compare a source's next version
-- with, recorded for each version written or held: its extent (EPSG:4326)
-- and its property keys, each with the JSON types its values had (a bit
-- mask: 1 string, 2 number, 4 boolean, 8 object or array).
CREATE TABLE geoingest_job_stats (
    job_id text PRIMARY KEY REFERENCES jobs (job_id) ON DELETE CASCADE,
    min_x   double precision,
    min_y   double precision,
    max_x   double precision,
    max_y   double precision,
    keys   jsonb NOT NULL DEFAULT '{}'
);

-- geoingest_guard_events: the audit trail of the guards, one row per
-- decision: 'held' (a guard tripped: the version is pending), 'forced'
-- (a guard tripped but the caller forced the version in), 'approved',
-- 'rejected', 'superseded' (a pending version a newer one overtook).
-- A pending job is decided once: at most one approved, rejected or
-- superseded row per job.
CREATE TABLE geoingest_guard_events (
    id       bigserial PRIMARY KEY,
    job_id   text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    action   text NOT NULL CHECK (action IN ('held', 'forced', 'approved', 'rejected', 'superseded')),
    actor    text NOT NULL,
    reason   text NOT NULL,
    summary  jsonb NOT NULL DEFAULT '{}',
    at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX geoingest_guard_events_decided ON geoingest_guard_events (job_id)
    WHERE action IN ('approved', 'rejected', 'superseded');
CREATE INDEX geoingest_guard_events_job ON geoingest_guard_events (job_id);

-- geoingest_job_extent is the extent of a job's rows in its table (its
-- own, attached or not, or its rows of the shared partition).
CREATE FUNCTION geoingest_job_extent(target text, job_ref bigint,
                                     OUT min_x double precision, OUT min_y double precision,
                                     OUT max_x double precision, OUT max_y double precision)
LANGUAGE plpgsql AS $$
DECLARE
    e box2d;
BEGIN
    EXECUTE format('SELECT ST_Extent(geom) FROM geoingest_store.%I WHERE job_ref = $1', geoingest_job_table(target, job_ref))
        INTO e USING job_ref;
    IF e IS NOT NULL THEN
        min_x := ST_XMin(e); min_y := ST_YMin(e); max_x := ST_XMax(e); max_y := ST_YMax(e);
    END IF;
END
$$;

-- geoingest_pend_job_table keeps a job's features out of the readers'
-- sight: a job in the shared partition (old_ref <= 0) has its rows moved
-- into a new table of its own for new_ref (> 0), indexed, and the ledger
-- row takes new_ref; a job with a table of its own keeps it (the caller
-- does not attach it). It returns the job's ref.
CREATE FUNCTION geoingest_pend_job_table(target text, job_id text, old_ref bigint, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    own text;
BEGIN
    IF old_ref > 0 THEN
        RETURN old_ref;
    END IF;
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending job %: new ref % is not positive', job_id, new_ref;
    END IF;
    own := geoingest_job_table(target, new_ref);
    EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                   own, geoingest_job_table(target, -1), new_ref);
    EXECUTE format('WITH moved AS (DELETE FROM geoingest_store.%I WHERE job_ref = $1
                                   RETURNING id, feature_index, layer, properties, geom, area_m2, feature_id)
                    INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2, feature_id)
                    SELECT id, $2, feature_index, layer, properties, geom, area_m2, feature_id FROM moved',
                   geoingest_job_table(target, -1), own)
        USING old_ref, new_ref;
    EXECUTE format('CREATE INDEX ON geoingest_store.%I USING gist (geom)', own);
    UPDATE jobs SET job_ref = new_ref WHERE jobs.job_id = geoingest_pend_job_table.job_id;
    RETURN new_ref;
END
$$;

-- geoingest_incoming_extent is the extent of the version a diff write
-- (migration 0026) copied into pg_temp.geoingest_incoming. SECURITY
-- INVOKER: the temporary table is the session's.
CREATE FUNCTION geoingest_incoming_extent(OUT min_x double precision, OUT min_y double precision,
                                          OUT max_x double precision, OUT max_y double precision)
LANGUAGE plpgsql AS $$
DECLARE
    e box2d;
BEGIN
    EXECUTE 'SELECT ST_Extent(geom) FROM pg_temp.geoingest_incoming' INTO e;
    IF e IS NOT NULL THEN
        min_x := ST_XMin(e); min_y := ST_YMin(e); max_x := ST_XMax(e); max_y := ST_YMax(e);
    END IF;
END
$$;

-- geoingest_pend_incoming holds the version a diff write copied into
-- pg_temp.geoingest_incoming: its rows go into the job's own table for
-- new_ref (made by geoingest_create_job_storage), which is not attached.
-- It returns how many rows it moved. SECURITY INVOKER, as above.
CREATE FUNCTION geoingest_pend_incoming(target text, new_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF new_ref <= 0 THEN
        RAISE EXCEPTION 'pending version: new ref % is not positive', new_ref;
    END IF;
    EXECUTE format('INSERT INTO geoingest_store.%I (id, job_ref, feature_index, layer, properties, geom, area_m2)
                    SELECT id, $1, feature_index, layer, properties, geom, area_m2 FROM pg_temp.geoingest_incoming',
                   geoingest_job_table(target, new_ref))
        USING new_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_drop_pending_table drops a pending job's own table, which no
-- reader can see (it was never attached); it refuses a table that is a
-- partition of the target.
CREATE FUNCTION geoingest_drop_pending_table(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref <= 0 THEN
        RAISE EXCEPTION 'pending table of ref %: not a table of its own', job_ref;
    END IF;
    IF EXISTS (SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'geoingest_store' AND c.relname = t) THEN
        RAISE EXCEPTION 'table % is attached: not a pending table', t;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', t);
END
$$;

-- geoingest_pending_rows counts a pending job's rows in its own table.
CREATE FUNCTION geoingest_pending_rows(target text, job_ref bigint, OUT n bigint, OUT area_m2 double precision)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0) FROM geoingest_store.%I', geoingest_job_table(target, job_ref))
        INTO n, area_m2;
EXCEPTION WHEN undefined_table THEN
    n := -1; area_m2 := 0;
END
$$;

DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_job_extent(text, bigint)',
                             'geoingest_pend_job_table(text, text, bigint, bigint)',
                             'geoingest_drop_pending_table(text, bigint)',
                             'geoingest_pending_rows(text, bigint)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
END
$$;
