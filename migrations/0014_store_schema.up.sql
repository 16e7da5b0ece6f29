-- geoingest schema, version 14: what a client lists is what an analyst
-- reads.
--
-- parcels and admin_units are partitioned tables (0005): a shared
-- partition, and a partition per large job until the compactor folds it
-- (0011). GDAL's PostgreSQL driver, through which QGIS, ogrinfo and
-- ogr2ogr list PostGIS layers, lists plain tables, views, materialised
-- views and foreign tables with a geometry column, in every schema and
-- whatever the user's privileges, and does not list partitioned tables:
-- so a client listed parcels_shared, admin_units_shared and one
-- parcels_job_<ref> per large job, and neither parcels nor admin_units.
--
-- This migration moves the storage out of the way, without copying a
-- row (ALTER ... SET SCHEMA changes the catalog only):
--
-- * the partitioned tables and every partition of theirs move to the
--   schema geoingest_store, with their indexes, triggers, the sequences of
--   their ids, their privileges and their autovacuum settings;
-- * parcels and admin_units in this schema become views of them
--   (SELECT every column): a simple view that the planner inlines, so a
--   query on parcels is planned exactly as on the table, prunes the same
--   partitions and uses the same indexes; an UPDATE, DELETE or INSERT on
--   it writes the table (an automatically updatable view). A client lists
--   them with their geometry type and SRID (MultiPolygon, 4326), and lists
--   the storage only schema-qualified (geoingest_store.parcels_shared);
-- * the views and functions of earlier migrations keep reading the same
--   tables (a view is bound to its tables, a function reads parcels, now
--   the view); the functions that create, fill, attach, fold and drop
--   partitions (0005, 0007, 0011) are redefined here to address
--   geoingest_store by name;
-- * the writer gets USAGE on geoingest_store (its COPY goes straight into
--   a partition) and, by default privileges, its rights on the partitions
--   created there later; the analyst gets no right on it at all: it reads
--   parcels and admin_units, and everything else, through the views of
--   this schema, which read the storage with their owner's rights, and
--   PostGIS's geometry_columns (which lists only what the user may read)
--   does not show it the storage.
--
-- A later migration that adds a column to a feature table adds it to the
-- view too (CREATE OR REPLACE VIEW): a view's column list is fixed when it
-- is created.
--
-- Writers of version 13 and before, still running while this migrates,
-- keep working: the two-argument geoingest_create_job_table they call
-- adds geoingest_store to the rest of their transaction's search_path, so
-- that the unqualified partition name it returns is found by their COPY.
-- This version's writers call geoingest_create_job_storage, which returns
-- the schema and the table.

-- The schema. Creating it needs CREATE on the database: the database's
-- owner has it; otherwise an administrator creates it for the schema owner
-- first (CREATE SCHEMA geoingest_store AUTHORIZATION <owner>).
DO $$
BEGIN
    IF to_regnamespace('geoingest_store') IS NULL AND NOT has_database_privilege(current_database(), 'CREATE') THEN
        RAISE EXCEPTION 'schema geoingest_store does not exist and % may not create it: as the database owner or a superuser, run CREATE SCHEMA geoingest_store AUTHORIZATION %, then migrate again',
            current_user, quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
CREATE SCHEMA IF NOT EXISTS geoingest_store;
DO $$
BEGIN
    IF NOT has_schema_privilege('geoingest_store', 'CREATE') THEN
        RAISE EXCEPTION 'schema geoingest_store exists and % may not create tables in it: as its owner, run GRANT USAGE, CREATE ON SCHEMA geoingest_store TO %, or ALTER SCHEMA geoingest_store OWNER TO %',
            current_user, quote_ident(current_user), quote_ident(current_user)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
DO $$
BEGIN
    IF pg_has_role((SELECT nspowner FROM pg_namespace WHERE nspname = 'geoingest_store'), 'USAGE') THEN
        COMMENT ON SCHEMA geoingest_store IS
            'geoingest''s feature storage: the partitioned tables parcels and admin_units and their partitions. Read the views parcels and admin_units of geoingest''s schema instead.';
    END IF;
END
$$;

-- Every partition first, then the partitioned tables (with their indexes,
-- triggers and owned sequences).
DO $$
DECLARE
    s   oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    rel record;
BEGIN
    FOR rel IN
        SELECT c.relname FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relnamespace = s AND p.relname IN ('parcels', 'admin_units') AND c.relnamespace = s
        ORDER BY c.relname
    LOOP
        EXECUTE format('ALTER TABLE %I SET SCHEMA geoingest_store', rel.relname);
    END LOOP;
    -- Emptied partitions waiting to be dropped (geoingest_folded) are
    -- still attached; a detached leftover of the same name moves too.
    FOR rel IN
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = s AND c.relkind = 'r' AND c.relname ~ '^(parcels|admin_units)_job_[0-9]+$'
    LOOP
        EXECUTE format('ALTER TABLE %I SET SCHEMA geoingest_store', rel.relname);
    END LOOP;
END
$$;
ALTER TABLE parcels SET SCHEMA geoingest_store;
ALTER TABLE admin_units SET SCHEMA geoingest_store;

-- The views analysts, reports and clients read.
CREATE VIEW parcels AS SELECT * FROM geoingest_store.parcels;
CREATE VIEW admin_units AS SELECT * FROM geoingest_store.admin_units;
COMMENT ON VIEW parcels IS 'Every parcel of every generation geoingest holds (join jobs on job_ref, or read geoingest_current_parcels for the current generations only).';
COMMENT ON VIEW admin_units IS 'Every admin unit of every generation geoingest holds (join jobs on job_ref, or read geoingest_current_admin_units for the current generations only).';

-- geoingest_create_job_storage returns the table to COPY a job's features
-- into, as (schema, table): its own partition for a positive ref, created
-- here as a plain table shaped like the target, with no index yet and a
-- CHECK that lets geoingest_finish_job_table attach it without a scan; the
-- target's shared partition otherwise. Call it in the write-gate
-- transaction: a rollback removes the table.
CREATE FUNCTION geoingest_create_job_storage(target text, job_ref bigint, OUT schema_name text, OUT table_name text)
LANGUAGE plpgsql AS $$
BEGIN
    schema_name := 'geoingest_store';
    table_name := geoingest_job_table(target, job_ref);
    IF job_ref > 0 THEN
        EXECUTE format('CREATE TABLE geoingest_store.%I (LIKE geoingest_store.%I INCLUDING DEFAULTS INCLUDING GENERATED, CHECK (job_ref = %s))',
                       table_name, target, job_ref);
    END IF;
END
$$;

-- geoingest_create_job_table is the entry point of writers of version 13
-- and before: it creates the job's table as above and returns its bare
-- name, which they COPY into unqualified; so it appends geoingest_store to
-- the search_path for the rest of the caller's transaction. It runs as the
-- caller (a SECURITY DEFINER function's settings end with it).
CREATE OR REPLACE FUNCTION geoingest_create_job_table(target text, job_ref bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    SELECT s.table_name INTO t FROM geoingest_create_job_storage(target, job_ref) s;
    IF NOT ('geoingest_store' = ANY (current_schemas(false))) THEN
        PERFORM set_config('search_path', current_setting('search_path') || ', geoingest_store', true);
    END IF;
    RETURN t;
END
$$;

-- geoingest_insert_staged: as in 0005, into the table in geoingest_store.
CREATE OR REPLACE FUNCTION geoingest_insert_staged(target text, job_ref bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('INSERT INTO geoingest_store.%I (job_ref, feature_index, layer, properties, geom)
                    SELECT $1, s.feature_index, s.layer, s.properties, ST_Transform(ST_GeomFromEWKB(s.wkb), 4326)
                    FROM geoingest_staging s', geoingest_job_table(target, job_ref))
        USING job_ref;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- geoingest_finish_job_table: as in 0007, on the tables of
-- geoingest_store. (The 3-argument form of 0007 calls this one.)
CREATE OR REPLACE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                                      invalid bigint[], server_check boolean,
                                                      OUT written bigint, OUT area_m2 double precision,
                                                      OUT features_checksum text, OUT repaired bigint,
                                                      OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := format('geoingest_store.%I', geoingest_job_table(target, job_ref));
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %s SET area_m2 = ST_Area(geom::geography)
                                   WHERE job_ref = $1 AND area_m2 IS NULL
                                   RETURNING feature_index, geom)
                        SELECT array_agg(feature_index) FILTER (WHERE NOT ST_IsValid(geom)) FROM m', t)
            INTO found USING job_ref;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %s
                            WHERE job_ref = $1 AND feature_index = (SELECT min(i) FROM unnest($2::bigint[]) i)
                            ORDER BY id LIMIT 1', t)
                INTO first USING job_ref, bad;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('UPDATE %s SET (geom, area_m2) = (SELECT v.g, ST_Area(v.g::geography)
                                                         FROM (SELECT ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3))) v(g))
                        WHERE job_ref = $1 AND feature_index = ANY($2)', t) USING job_ref, bad;
        GET DIAGNOSTICS repaired = ROW_COUNT;
        EXECUTE format('DELETE FROM %s WHERE job_ref = $1 AND feature_index = ANY($2) AND ST_IsEmpty(geom)', t)
            USING job_ref, bad;
        GET DIAGNOSTICS collapsed = ROW_COUNT;
    END IF;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM %s WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum USING job_ref;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %s USING gist (geom)', t);
        EXECUTE format('ALTER TABLE geoingest_store.%I ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)',
                       target, t, job_ref, job_ref + 1);
    END IF;
END
$$;

-- geoingest_drop_job_features: as in 0005, in geoingest_store.
CREATE OR REPLACE FUNCTION geoingest_drop_job_features(target text, job_ref bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text := geoingest_job_table(target, job_ref);
BEGIN
    IF job_ref > 0 THEN
        EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', t);
    ELSE
        EXECUTE format('DELETE FROM geoingest_store.%I WHERE job_ref = $1', t) USING job_ref;
    END IF;
END
$$;

-- geoingest_fold_job: as in 0011, between the tables of geoingest_store.
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

-- geoingest_drop_folded: as in 0011; geoingest_folded keeps the bare
-- names, in geoingest_store.
CREATE OR REPLACE FUNCTION geoingest_drop_folded() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    f record;
BEGIN
    SELECT g.table_name, g.target INTO f FROM geoingest_folded g
    WHERE g.wait_for IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'virtualxid' AND l.virtualtransaction = ANY (g.wait_for))
    ORDER BY g.folded_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF f.table_name NOT LIKE f.target || '\_job\_%' THEN
        RAISE EXCEPTION 'geoingest_folded names % for %', f.table_name, f.target;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS geoingest_store.%I', f.table_name);
    DELETE FROM geoingest_folded WHERE table_name = f.table_name;
    RETURN f.table_name;
END
$$;

-- Rights. CREATE OR REPLACE keeps a function's privileges but not its
-- SECURITY DEFINER and SET clauses: they are stated again, as 0005, 0007
-- and 0011 did. The new entry point is the writer's only; the
-- compatibility one runs as its caller, who needs EXECUTE on
-- geoingest_create_job_storage (the writer) to use it.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['geoingest_create_job_storage(text, bigint)',
                             'geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean)',
                             'geoingest_drop_job_features(text, bigint)',
                             'geoingest_fold_job(text)', 'geoingest_drop_folded()'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp', f, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM geoingest_analyst', f);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer', f);
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_create_job_table(text, bigint) TO geoingest_writer;
        GRANT SELECT, INSERT, UPDATE, DELETE ON parcels, admin_units TO geoingest_writer;
        GRANT USAGE ON SCHEMA geoingest_store TO geoingest_writer;
        ALTER DEFAULT PRIVILEGES IN SCHEMA geoingest_store GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO geoingest_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        GRANT SELECT ON parcels, admin_units TO geoingest_analyst;
        GRANT EXECUTE ON FUNCTION geoingest_create_job_table(text, bigint) TO geoingest_analyst;
        -- Nothing in geoingest_store: clients that list only what the
        -- user may read (PostGIS's geometry_columns view, and the clients
        -- built on it) then do not show the storage to the analyst.
        REVOKE ALL ON ALL TABLES IN SCHEMA geoingest_store FROM geoingest_analyst;
    END IF;
END
$$;
