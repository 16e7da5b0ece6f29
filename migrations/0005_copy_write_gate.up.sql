-- geoingest schema, version 5: the write gate at the speed of COPY.
--
-- Upgrades a version-4 database in place:
--
-- * jobs.job_ref: a compact bigint reference to the ledger row, carried by
--   every feature row instead of the 64-character job_id. Its sign says
--   where the job's features live: a negative ref is a job whose features
--   share the <target>_shared partition (small jobs, and every job written
--   before this migration); a positive ref is a job with a partition of its
--   own, <target>_job_<ref>, created, filled by COPY, indexed and attached
--   inside the job's write-gate transaction. Replacing or retiring such a
--   generation drops its partition: a metadata operation, not a DELETE.
-- * parcels and admin_units become tables partitioned by RANGE (job_ref),
--   with the same names and the columns analysts use (id bigint,
--   properties jsonb, geom geometry(MultiPolygon,4326)), plus job_ref and
--   area_m2: each row's area on the spheroid, ST_Area(geom::geography),
--   a stored generated column, so it always agrees with geom.
-- * geoingest_features: both feature tables as one relation with a
--   target_table column, so that the ledger's reconciliation is one query.
-- * geoingest_row_hash: the per-row checksum, a fraction of the cost of
--   geoingest_feature_hash (three md5 per row). Every current job's
--   features_checksum is recomputed with it where the rows still match the
--   old checksum; a job whose rows had already changed keeps its old
--   checksum, so verify still reports it.
-- * The write gate's server side, as functions: geoingest_create_job_table,
--   geoingest_insert_staged, geoingest_finish_job_table,
--   geoingest_drop_job_features. Go never builds SQL from input: these take
--   a target table that must be 'parcels' or 'admin_units' and a bigint.

-- geoingest_row_hash is a 64-bit hash of one feature row: its index,
-- properties and geometry (PostGIS's geometry_hash: its SRID and
-- coordinates). Summed over a job's rows (as numeric) it gives an
-- order-independent checksum in constant memory. A change to any one row
-- changes the sum (but for a 2^-32 chance).
CREATE FUNCTION geoingest_row_hash(feature_index bigint, properties jsonb, geom geometry)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT jsonb_hash_extended(properties, hashint8extended(feature_index, geometry_hash(geom)))
$$;

-- The job reference. Jobs written before this migration are numbered -1,
-- -2, ... in commit order, and so is a ledger row inserted by hand (the
-- column's default); geoingest's writer gives each new job a random ref
-- (see ingest.Store) whose magnitude is at least 2^32, so the two never
-- meet.
CREATE SEQUENCE geoingest_job_ref_seq;
ALTER TABLE jobs ADD COLUMN job_ref bigint;
UPDATE jobs j SET job_ref = -nextval('geoingest_job_ref_seq')
FROM (SELECT job_id FROM jobs ORDER BY committed_at, job_id) n
WHERE n.job_id = j.job_id;
ALTER TABLE jobs ALTER COLUMN job_ref SET DEFAULT -nextval('geoingest_job_ref_seq');
ALTER TABLE jobs ALTER COLUMN job_ref SET NOT NULL;
ALTER TABLE jobs ADD CONSTRAINT jobs_job_ref_key UNIQUE (job_ref);

DROP VIEW geoingest_current_parcels;
DROP VIEW geoingest_current_admin_units;
ALTER TABLE parcels RENAME TO geoingest_parcels_v4;
ALTER TABLE admin_units RENAME TO geoingest_admin_units_v4;
ALTER INDEX parcels_geom_idx RENAME TO geoingest_parcels_v4_geom_idx;
ALTER INDEX admin_units_geom_idx RENAME TO geoingest_admin_units_v4_geom_idx;

-- Feature ids keep counting from the old identity columns.
CREATE SEQUENCE geoingest_parcels_id_seq CACHE 100;
SELECT setval('geoingest_parcels_id_seq', coalesce((SELECT max(id) FROM geoingest_parcels_v4), 0) + 1, false);
CREATE SEQUENCE geoingest_admin_units_id_seq CACHE 100;
SELECT setval('geoingest_admin_units_id_seq', coalesce((SELECT max(id) FROM geoingest_admin_units_v4), 0) + 1, false);

-- The feature tables. There is no unique index on (job_ref,
-- feature_index): the write gate (the ledger's primary key) is what keeps a
-- job's rows exactly once, and `geoingest verify` checks it from the
-- ledger's count and checksum. id is unique by its sequence.
CREATE TABLE parcels (
    id            bigint NOT NULL DEFAULT nextval('geoingest_parcels_id_seq'),
    job_ref       bigint NOT NULL,
    feature_index bigint NOT NULL,
    layer         text NOT NULL DEFAULT '',
    properties    jsonb NOT NULL DEFAULT '{}',
    geom          geometry(MultiPolygon, 4326) NOT NULL,
    area_m2       double precision GENERATED ALWAYS AS (ST_Area(geom::geography)) STORED
) PARTITION BY RANGE (job_ref);
ALTER SEQUENCE geoingest_parcels_id_seq OWNED BY parcels.id;
CREATE TABLE parcels_shared PARTITION OF parcels FOR VALUES FROM (MINVALUE) TO (0);

CREATE TABLE admin_units (
    id            bigint NOT NULL DEFAULT nextval('geoingest_admin_units_id_seq'),
    job_ref       bigint NOT NULL,
    feature_index bigint NOT NULL,
    layer         text NOT NULL DEFAULT '',
    properties    jsonb NOT NULL DEFAULT '{}',
    geom          geometry(MultiPolygon, 4326) NOT NULL,
    area_m2       double precision GENERATED ALWAYS AS (ST_Area(geom::geography)) STORED
) PARTITION BY RANGE (job_ref);
ALTER SEQUENCE geoingest_admin_units_id_seq OWNED BY admin_units.id;
CREATE TABLE admin_units_shared PARTITION OF admin_units FOR VALUES FROM (MINVALUE) TO (0);

-- Existing rows move to the shared partitions. A row whose job_id is not
-- in the ledger (verify reported it as a stray) keeps existing, under the
-- one ref no job can have, so verify goes on reporting it.
INSERT INTO parcels (id, job_ref, feature_index, layer, properties, geom)
SELECT o.id, coalesce(j.job_ref, -9223372036854775807), o.feature_index, o.layer, o.properties, o.geom
FROM geoingest_parcels_v4 o LEFT JOIN jobs j ON j.job_id = o.job_id;
INSERT INTO admin_units (id, job_ref, feature_index, layer, properties, geom)
SELECT o.id, coalesce(j.job_ref, -9223372036854775807), o.feature_index, o.layer, o.properties, o.geom
FROM geoingest_admin_units_v4 o LEFT JOIN jobs j ON j.job_id = o.job_id;

-- geoingest_features is both feature tables as one relation.
CREATE VIEW geoingest_features AS
SELECT 'parcels'::text AS target_table, p.job_ref, p.id, p.feature_index, p.layer, p.properties, p.geom, p.area_m2
FROM parcels p
UNION ALL
SELECT 'admin_units'::text, a.job_ref, a.id, a.feature_index, a.layer, a.properties, a.geom, a.area_m2
FROM admin_units a;

-- Checksums move to geoingest_row_hash where the rows still match.
UPDATE jobs j SET features_checksum = c.new_checksum
FROM (SELECT f.target_table, f.job_ref,
             sum(geoingest_feature_hash(f.feature_index, f.properties, f.geom))::text AS old_checksum,
             sum(geoingest_row_hash(f.feature_index, f.properties, f.geom))::text AS new_checksum
      FROM geoingest_features f GROUP BY f.target_table, f.job_ref) c
WHERE j.status = 'current' AND c.target_table = j.target_table AND c.job_ref = j.job_ref
  AND c.old_checksum = j.features_checksum;

DROP TABLE geoingest_parcels_v4;
DROP TABLE geoingest_admin_units_v4;

CREATE INDEX parcels_geom_idx ON parcels USING gist (geom);
CREATE INDEX admin_units_geom_idx ON admin_units USING gist (geom);
CREATE INDEX parcels_shared_job_ref_idx ON parcels_shared (job_ref);
CREATE INDEX admin_units_shared_job_ref_idx ON admin_units_shared (job_ref);

-- The views of migration 0002, with the job's id from the ledger (and
-- now its ref and each row's area).
CREATE VIEW geoingest_current_parcels AS
SELECT p.id, j.job_id, p.feature_index, p.layer, p.properties, p.geom, s.pipeline_version, p.job_ref, p.area_m2
FROM parcels p
JOIN jobs j ON j.job_ref = p.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'parcels';

CREATE VIEW geoingest_current_admin_units AS
SELECT a.id, j.job_id, a.feature_index, a.layer, a.properties, a.geom, s.pipeline_version, a.job_ref, a.area_m2
FROM admin_units a
JOIN jobs j ON j.job_ref = a.job_ref
JOIN sources s ON s.current_job_id = j.job_id AND s.target_table = 'admin_units';

-- geoingest_job_ref is the ref of a job given its id (NULL if unknown), for
-- analysts: SELECT * FROM parcels WHERE job_ref = geoingest_job_ref('…').
CREATE FUNCTION geoingest_job_ref(job_id text) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT j.job_ref FROM jobs j WHERE j.job_id = geoingest_job_ref.job_id
$$;

-- geoingest_job_table is the table that holds a job's features: its own
-- partition for a positive ref, the target's shared partition otherwise.
CREATE FUNCTION geoingest_job_table(target text, job_ref bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF target NOT IN ('parcels', 'admin_units') THEN
        RAISE EXCEPTION 'unknown target table %', target USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF job_ref > 0 THEN
        RETURN target || '_job_' || job_ref;
    END IF;
    RETURN target || '_shared';
END
$$;

-- geoingest_create_job_table returns the table to COPY a job's features
-- into (see geoingest_job_table). For a positive ref it first creates it:
-- a plain table shaped like the target, with no index yet and a CHECK
-- that lets geoingest_finish_job_table attach it without a scan. Call it
-- in the write-gate transaction: a rollback removes it.
CREATE FUNCTION geoingest_create_job_table(target text, job_ref bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                       t, target, job_ref);
    END IF;
    RETURN t;
END
$$;

-- geoingest_insert_staged moves the features staged in geoingest_staging
-- (a temporary table of EWKB in the source's CRS) into the job's table,
-- transformed to EPSG:4326: the path for sources in another CRS, whose
-- geometry needs PROJ. Returns the rows inserted.
CREATE FUNCTION geoingest_insert_staged(target text, job_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('INSERT INTO %I (job_ref, feature_index, layer, properties, geom)
                    SELECT $1, s.feature_index, s.layer, s.properties, ST_Transform(ST_GeomFromEWKB(s.wkb), 4326)
                    FROM geoingest_staging s', geoingest_job_table(target, job_ref))
        USING job_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_finish_job_table checks and summarises a job's rows after the
-- COPY, in one pass over them when all are valid: the number written,
-- their total area on the spheroid, their checksum (sum of
-- geoingest_row_hash), and ST_IsValid of each. Invalid geometries are
-- repaired when repair is true (ST_MakeValid keeping the polygonal part,
-- as MultiPolygon; a geometry with no area left is removed and counted as
-- collapsed; repaired counts both), or raise a data_exception naming the
-- first invalid feature. Then, for a job with a table of its own, it
-- builds the table's GiST index once and attaches it to the target as the
-- partition for the job's ref (a brief SHARE UPDATE EXCLUSIVE lock on the
-- target, held to commit).
CREATE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                           OUT written bigint, OUT area_m2 double precision,
                                           OUT features_checksum text, OUT repaired bigint,
                                           OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
    invalid bigint;
    bad record;
BEGIN
    repaired := 0;
    collapsed := 0;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text,
                           count(*) FILTER (WHERE NOT ST_IsValid(geom))
                    FROM %I WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum, invalid USING job_ref;
    IF invalid > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %I
                            WHERE job_ref = $1 AND NOT ST_IsValid(geom) ORDER BY feature_index LIMIT 1', t)
                INTO bad USING job_ref;
            RAISE EXCEPTION 'feature %: invalid geometry: %', bad.feature_index, bad.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('UPDATE %I SET geom = ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3))
                        WHERE job_ref = $1 AND NOT ST_IsValid(geom)', t) USING job_ref;
        GET DIAGNOSTICS repaired = ROW_COUNT;
        EXECUTE format('DELETE FROM %I WHERE job_ref = $1 AND ST_IsEmpty(geom)', t) USING job_ref;
        GET DIAGNOSTICS collapsed = ROW_COUNT;
        EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                        FROM %I WHERE job_ref = $1', t)
            INTO written, area_m2, features_checksum USING job_ref;
    END IF;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %I USING gist (geom)', t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                       target, t, job_ref, job_ref + 1);
    END IF;
END
$$;

-- geoingest_drop_job_features removes a job's features: its partition
-- (DROP TABLE: an ACCESS EXCLUSIVE lock on the target until commit, so
-- call it last) or its rows of the shared partition.
CREATE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('DROP TABLE IF EXISTS %I', t);
    ELSE
        EXECUTE format('DELETE FROM %I WHERE job_ref = $1', t) USING job_ref;
    END IF;
END
$$;

-- The functions that create, attach and drop partitions run with their
-- owner's rights (the migration's role, which owns parcels and
-- admin_units): a writer role that may only read and write the tables
-- (migration 0003's geoingest_writer) may neither create tables in the
-- schema nor attach partitions to a table it does not own. Their
-- search_path is pinned to this schema, with pg_temp last, so that no
-- caller's object can stand in for one of theirs. The tables they create
-- belong to that owner, and the writer gets its rights on them from the
-- schema's default privileges (0003). Only the writer may call them:
-- EXECUTE is taken from PUBLIC and from the read-only analyst role.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_create_job_table(text, bigint)',
                             'geoingest_finish_job_table(text, bigint, boolean)',
                             'geoingest_drop_job_features(text, bigint)'] LOOP
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
