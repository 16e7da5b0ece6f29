-- Undoes 0003 in this database: every privilege it granted to
-- geoingest_writer and geoingest_analyst, and its default privileges.
--
-- The roles themselves stay: they are cluster-wide, other databases of the
-- cluster may use them, and dropping one would silently take it away from
-- the LOGIN users that are its members. Drop them by hand (DROP ROLE) once
-- no database uses them. CREATE on the schema, revoked from PUBLIC on
-- servers older than PostgreSQL 15, is not given back.

DO $$
DECLARE
    s   text := current_schema();
    nsp oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    me  oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
    obj record;
BEGIN
    IF (SELECT count(*) FROM pg_roles WHERE rolname IN ('geoingest_writer', 'geoingest_analyst')) < 2 THEN
        RAISE WARNING 'geoingest: the roles geoingest_writer and geoingest_analyst do not both exist: nothing to revoke';
        RETURN;
    END IF;

    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON TABLES FROM geoingest_writer, geoingest_analyst', s);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON SEQUENCES FROM geoingest_writer, geoingest_analyst', s);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON FUNCTIONS FROM geoingest_writer, geoingest_analyst', s);

    -- The owner's tables, views, sequences and functions in this schema.
    FOR obj IN
        SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S') AND c.relnamespace = nsp AND c.relowner = me
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
    LOOP
        IF obj.relkind = 'S' THEN
            EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM geoingest_writer, geoingest_analyst', obj.name);
        ELSE
            EXECUTE format('REVOKE ALL ON TABLE %s FROM geoingest_writer, geoingest_analyst', obj.name);
        END IF;
    END LOOP;
    FOR obj IN
        SELECT p.oid::regprocedure AS name FROM pg_proc p
        WHERE p.prokind = 'f' AND p.pronamespace = nsp AND p.proowner = me
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM geoingest_writer, geoingest_analyst', obj.name);
    END LOOP;

    IF has_database_privilege(current_database(), 'CONNECT WITH GRANT OPTION') THEN
        EXECUTE format('REVOKE ALL ON DATABASE %I FROM geoingest_writer, geoingest_analyst', current_database());
    END IF;
    IF has_schema_privilege(s, 'USAGE WITH GRANT OPTION') THEN
        EXECUTE format('REVOKE ALL ON SCHEMA %I FROM geoingest_writer, geoingest_analyst', s);
    END IF;
    IF to_regclass('spatial_ref_sys') IS NOT NULL
       AND has_table_privilege('spatial_ref_sys', 'INSERT WITH GRANT OPTION') THEN
        REVOKE ALL ON spatial_ref_sys FROM geoingest_writer;
    END IF;
END
$$;
