-- geoingest schema, version 3: least privilege.
--
-- Two NOLOGIN group roles; operators grant them to LOGIN users (README,
-- "Least privilege"):
--
--   geoingest_writer   serve, ingest, backfill, replay, jobs: reads and
--                      writes the ledger (jobs), claims, sources and the
--                      feature tables; creates its temporary staging table;
--                      registers custom CRSs in spatial_ref_sys. It owns
--                      nothing and has no CREATE on the schema, so it cannot
--                      create, alter, drop or truncate anything.
--   geoingest_analyst  read-only: the report functions and views of 0002,
--                      `geoingest report area`, `geoingest verify`,
--                      `geoingest jobs`.
--
-- Both may read schema_migrations, so that the runtime commands check the
-- schema version without DDL rights; only the schema owner migrates.
--
-- Migrations run as the schema owner: the role that ran 0001 (it owns the
-- tables) and that runs every later migration.
--
-- LATER MIGRATIONS MUST KEEP THESE GRANTS IN MIND. The default privileges
-- below give tables and views (writer: SELECT, INSERT, UPDATE, DELETE;
-- analyst: SELECT), sequences (writer: USAGE, SELECT) and functions (both:
-- EXECUTE) that the owner creates later in this schema to the two roles,
-- but only when the same role runs the later migration and creates them
-- in the same schema. A table the analyst must not read, a table the
-- writer must only read, a function that writes (which the analyst must
-- not be able to run: revoke its EXECUTE from geoingest_analyst and
-- PUBLIC), or a SECURITY DEFINER function (none so far: every geoingest
-- function is SECURITY INVOKER and none writes) needs its own GRANT/REVOKE
-- in that migration.
--
-- Roles are cluster-wide: they are created only when missing, so a second
-- database in the same cluster, or one created from a migrated template,
-- migrates cleanly. Creating them needs CREATEROLE (or a superuser to have
-- created them first). Grants on objects the owner does not own (the
-- database, the schema, PostGIS's spatial_ref_sys) are made when the owner
-- holds them with grant option; otherwise a WARNING says what an
-- administrator must run.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['geoingest_writer', 'geoingest_analyst'] LOOP
        CONTINUE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = r);
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        EXCEPTION
            -- Created meanwhile by the migration of another database.
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'role % does not exist and % may not create it: create it once per cluster as a superuser (CREATE ROLE % NOLOGIN), or give % CREATEROLE',
                    r, current_user, quote_ident(r), quote_ident(current_user)
                    USING ERRCODE = 'insufficient_privilege';
        END;
    END LOOP;
END
$$;

-- The tables of 0001 and the views of 0002.
GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, claims, sources, parcels, admin_units TO geoingest_writer;
GRANT SELECT ON jobs, claims, sources, parcels, admin_units TO geoingest_analyst;
GRANT SELECT ON geoingest_current_parcels, geoingest_current_admin_units TO geoingest_writer, geoingest_analyst;
-- golang-migrate's version table: read only, for the version check.
GRANT SELECT ON schema_migrations TO geoingest_writer, geoingest_analyst;

DO $$
DECLARE
    s     text := current_schema();
    nsp   oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    me    oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
    obj   record;
BEGIN
    -- Sequences (the identity columns') and functions of the owner in this
    -- schema; not PostGIS's, which belong to the extension.
    FOR obj IN
        SELECT c.oid::regclass AS name FROM pg_class c
        WHERE c.relkind = 'S' AND c.relnamespace = nsp AND c.relowner = me
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO geoingest_writer', obj.name);
    END LOOP;
    FOR obj IN
        SELECT p.oid::regprocedure AS name FROM pg_proc p
        WHERE p.prokind = 'f' AND p.pronamespace = nsp AND p.proowner = me
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO geoingest_writer, geoingest_analyst', obj.name);
    END LOOP;

    -- What the owner creates here later (see the note at the top).
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO geoingest_writer', s);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO geoingest_analyst', s);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT ON SEQUENCES TO geoingest_writer', s);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT EXECUTE ON FUNCTIONS TO geoingest_writer, geoingest_analyst', s);

    -- Connecting, and the writer's ON COMMIT DROP staging table. PUBLIC
    -- has these by default; granted so that a database that revoked them
    -- from PUBLIC still works.
    IF has_database_privilege(current_database(), 'CONNECT WITH GRANT OPTION')
       AND has_database_privilege(current_database(), 'TEMPORARY WITH GRANT OPTION') THEN
        EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO geoingest_writer', current_database());
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO geoingest_analyst', current_database());
    ELSE
        RAISE WARNING 'geoingest: % may not grant on database %: unless PUBLIC has CONNECT and TEMPORARY there, run as its owner: GRANT CONNECT, TEMPORARY ON DATABASE % TO geoingest_writer; GRANT CONNECT ON DATABASE % TO geoingest_analyst',
            current_user, current_database(), quote_ident(current_database()), quote_ident(current_database());
    END IF;

    IF has_schema_privilege(s, 'USAGE WITH GRANT OPTION') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO geoingest_writer, geoingest_analyst', s);
    ELSE
        RAISE WARNING 'geoingest: % may not grant on schema %: unless PUBLIC has USAGE on it, run as its owner: GRANT USAGE ON SCHEMA % TO geoingest_writer, geoingest_analyst',
            current_user, s, quote_ident(s);
    END IF;

    -- Nobody but the owner creates objects in the schema. PostgreSQL 15
    -- no longer gives PUBLIC CREATE on the public schema; older servers do,
    -- and through PUBLIC the writer could create tables.
    IF has_schema_privilege('public', s, 'CREATE') THEN
        IF pg_has_role((SELECT nspowner FROM pg_namespace WHERE oid = nsp), 'USAGE') THEN
            EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', s);
        ELSE
            RAISE WARNING 'geoingest: PUBLIC may create objects in schema %, so geoingest_writer can change the schema: run as its owner: REVOKE CREATE ON SCHEMA % FROM PUBLIC',
                s, quote_ident(s);
        END IF;
    END IF;

    -- Custom CRSs (SRIDs 990000-998999) are registered by the writer.
    IF to_regclass('spatial_ref_sys') IS NOT NULL THEN
        IF has_table_privilege('spatial_ref_sys', 'INSERT WITH GRANT OPTION') THEN
            GRANT INSERT ON spatial_ref_sys TO geoingest_writer;
        ELSE
            RAISE WARNING 'geoingest: % may not grant on spatial_ref_sys: to let geoingest_writer register custom CRSs, run as a superuser: GRANT INSERT ON spatial_ref_sys TO geoingest_writer',
                current_user;
        END IF;
    END IF;
END
$$;
