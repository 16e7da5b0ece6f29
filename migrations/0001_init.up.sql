-- geoingest schema, version 1.
--
-- jobs is the write gate: a job's row is inserted with ON CONFLICT (job_id)
-- DO NOTHING as the first statement of the transaction that writes its
-- features, so a job's features exist if and only if its jobs row does.
-- claims is the claim gate: a leased, advisory record that stops duplicate
-- deliveries before they download anything. sources tracks which job is the
-- current generation of each source (bucket, key, target, pipeline version).

CREATE EXTENSION IF NOT EXISTS postgis;

CREATE TABLE jobs (
    job_id           text PRIMARY KEY CHECK (job_id ~ '^[0-9a-f]{64}$'),
    source_bucket    text NOT NULL,
    source_key       text NOT NULL,
    version_token    text NOT NULL,
    -- order_token orders versions of the same source: a time and/or the
    -- S3 sequencer (see ingest.CompareOrder, which compares them).
    order_token      text NOT NULL DEFAULT '',
    params           jsonb NOT NULL,
    pipeline         text NOT NULL,
    pipeline_version text NOT NULL,
    target_table     text NOT NULL CHECK (target_table IN ('parcels', 'admin_units')),
    -- current: its features are the source's current generation;
    -- superseded: a late older version, committed with no features;
    -- replaced: was current, its features were removed by a newer version;
    -- retired: was current, removed by a delete event;
    -- deleted: a delete event that was applied (the source then has no
    -- current generation until a newer version arrives).
    status           text NOT NULL CHECK (status IN ('current', 'superseded', 'replaced', 'retired', 'deleted')),
    feature_count    bigint NOT NULL DEFAULT 0,
    total_area_m2    double precision NOT NULL DEFAULT 0,
    content_hash     text NOT NULL,
    -- features_checksum is geoingest_features_checksum over the rows the
    -- job wrote, recorded at write time: verify and replay recompute it to
    -- find rows changed since.
    features_checksum text NOT NULL DEFAULT '0',
    source_srid      integer,
    encoding         text NOT NULL DEFAULT '',
    skipped_null     bigint NOT NULL DEFAULT 0,
    skipped_type     bigint NOT NULL DEFAULT 0,
    repaired_invalid bigint NOT NULL DEFAULT 0,
    committed_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX jobs_source_idx ON jobs (source_bucket, source_key, target_table);

CREATE TABLE claims (
    job_id        text PRIMARY KEY,
    state         text NOT NULL CHECK (state IN ('CLAIMED', 'COMMITTED', 'FAILED')),
    owner         text NOT NULL,
    lease_until   timestamptz NOT NULL,
    attempts      integer NOT NULL DEFAULT 1,
    last_error    text,
    source_bucket text NOT NULL,
    source_key    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX claims_state_idx ON claims (state);

CREATE TABLE sources (
    source_bucket    text NOT NULL,
    source_key       text NOT NULL,
    target_table     text NOT NULL,
    pipeline_version text NOT NULL,
    -- NULL when the source has no current generation (never written, or
    -- retired by a delete).
    current_job_id   text REFERENCES jobs (job_id),
    -- current_order is the order token of the newest version applied to
    -- the source (a write or a delete): an older version is superseded.
    current_order    text NOT NULL DEFAULT '',
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_bucket, source_key, target_table, pipeline_version)
);

CREATE UNIQUE INDEX sources_current_job_idx ON sources (current_job_id);

-- The feature tables. (job_id, feature_index) is unique: a second line of
-- defence behind the write gate. There is deliberately no foreign key to
-- jobs: it would cost a lookup per row on the COPY path, and `geoingest
-- verify` checks that every row belongs to a current job.
CREATE TABLE parcels (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        text NOT NULL,
    feature_index bigint NOT NULL,
    layer         text NOT NULL DEFAULT '',
    properties    jsonb NOT NULL DEFAULT '{}',
    geom          geometry(MultiPolygon, 4326) NOT NULL,
    UNIQUE (job_id, feature_index)
);
CREATE INDEX parcels_geom_idx ON parcels USING gist (geom);

CREATE TABLE admin_units (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        text NOT NULL,
    feature_index bigint NOT NULL,
    layer         text NOT NULL DEFAULT '',
    properties    jsonb NOT NULL DEFAULT '{}',
    geom          geometry(MultiPolygon, 4326) NOT NULL,
    UNIQUE (job_id, feature_index)
);
CREATE INDEX admin_units_geom_idx ON admin_units USING gist (geom);

-- geoingest_normalize turns a staged EWKB geometry into what the feature
-- tables hold: transformed to SRID 4326, then repaired with ST_MakeValid
-- when invalid (keeping only the polygonal part), then promoted to
-- MultiPolygon. (Transform before repair, as ogr2ogr -t_srs followed by
-- ST_MakeValid does.) It returns NULL when nothing polygonal is left, for
-- example a polygon that collapses to a line when repaired. With
-- repair = false an invalid geometry raises an exception naming the feature
-- index instead.
CREATE FUNCTION geoingest_normalize(wkb bytea, feature_index bigint, repair boolean,
                                    OUT geom geometry, OUT repaired boolean)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    g geometry := ST_GeomFromEWKB(wkb);
BEGIN
    repaired := false;
    IF g IS NULL OR ST_IsEmpty(g) THEN
        RETURN;
    END IF;
    IF ST_SRID(g) <> 4326 THEN
        g := ST_Transform(g, 4326);
    END IF;
    IF NOT ST_IsValid(g) THEN
        IF NOT repair THEN
            RAISE EXCEPTION 'feature %: invalid geometry: %', feature_index, ST_IsValidReason(g)
                USING ERRCODE = 'data_exception';
        END IF;
        g := ST_CollectionExtract(ST_MakeValid(g), 3);
        repaired := true;
    END IF;
    IF ST_IsEmpty(g) THEN
        RETURN;
    END IF;
    geom := ST_Multi(g);
END
$$;

-- geoingest_feature_hash is a 64-bit hash of one feature row (its index,
-- properties and EWKB geometry). Summed over a job's rows it gives an
-- order-independent checksum that needs constant memory, however many rows
-- the job has: geoingest_features_checksum.
CREATE FUNCTION geoingest_feature_hash(feature_index bigint, properties jsonb, geom geometry)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || left(md5(feature_index::text || ':' || md5(properties::text) || ':' || md5(ST_AsEWKB(geom))), 16))::bit(64)::bigint::numeric
$$;
