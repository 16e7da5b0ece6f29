-- geoingest schema, version 21: the compactor rebuilds a shared
-- partition's index that has grown well past what a fresh build takes.
--
-- A shared partition lives for the database's life and every replacement
-- inserts and deletes in it. VACUUM frees the dead rows' heap space for
-- reuse, but an index (the GiST above all) only grows: after a year of
-- weekly replacements the shared parcels GiST held 2.5x the bytes per row
-- of a fresh build of the same rows. The compactor (ingest/postgis,
-- reindex.go) rebuilds such an index with REINDEX INDEX CONCURRENTLY,
-- which blocks neither readers nor writers, and cannot run in a
-- transaction block (so not in a function: the statement is the
-- compactor's, with the name quoted by pgx.Identifier from what
-- geoingest_shared_indexes returns).
--
-- The criterion is the index's bytes per live row (pg_relation_size over
-- the partition's pg_class.reltuples, as autovacuum's ANALYZE or the
-- rebuild itself left it: no scan) against the same measure taken right
-- after its last rebuild, recorded here. An index is rebuilt when it has
-- grown past a factor of that (the compactor's setting); one with no
-- record yet is rebuilt once, when it is large enough to matter, and that
-- rebuild gives its record.

-- geoingest_index_builds: per index of a shared partition, its size per
-- live row right after the compactor's last rebuild of it. Keyed by name:
-- REINDEX CONCURRENTLY gives the index a new oid under the same name.
CREATE TABLE geoingest_index_builds (
    index_name    text PRIMARY KEY,
    table_name    text NOT NULL,
    bytes         bigint NOT NULL,
    live_rows     double precision NOT NULL,
    bytes_per_row double precision NOT NULL,
    seconds       double precision NOT NULL,
    built_at      timestamptz NOT NULL DEFAULT now()
);

-- geoingest_shared_indexes lists the indexes of the shared partitions:
-- its size, the partition's live rows (reltuples; -1 or 0 when never
-- analyzed), the bytes per row recorded after its last rebuild (NULL when
-- none), and whether it is the leftover of an interrupted REINDEX
-- CONCURRENTLY: an INVALID index named <index>_ccnew[N] or _ccold[N],
-- which PostgreSQL keeps maintaining on every write until it is dropped;
-- and whether the current role may rebuild or drop it (REINDEX and DROP
-- INDEX need the table's owner: geoingest_writer is not).
CREATE FUNCTION geoingest_shared_indexes()
RETURNS TABLE (schema_name text, index_name text, table_name text, bytes bigint,
               live_rows double precision, built_bytes_per_row double precision, leftover boolean,
               may_rebuild boolean)
LANGUAGE sql STABLE AS $$
    SELECT n.nspname::text, ic.relname::text, tc.relname::text, pg_relation_size(ic.oid),
           tc.reltuples::double precision, b.bytes_per_row,
           NOT i.indisvalid AND ic.relname ~ '_cc(new|old)[0-9]*$',
           pg_has_role(current_user, tc.relowner, 'USAGE')
    FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_class tc ON tc.oid = i.indrelid
    JOIN pg_namespace n ON n.oid = tc.relnamespace
    LEFT JOIN geoingest_index_builds b ON b.index_name = ic.relname
    WHERE n.nspname = 'geoingest_store' AND tc.relname IN ('parcels_shared', 'admin_units_shared')
    ORDER BY tc.relname, ic.relname
$$;

-- geoingest_note_index_build records index_name's size per live row
-- right after the compactor rebuilt it in seconds, and returns its size
-- (NULL when the partition's rows are unknown: nothing is recorded).
CREATE FUNCTION geoingest_note_index_build(index_name text, seconds double precision)
RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO geoingest_index_builds AS b (index_name, table_name, bytes, live_rows, bytes_per_row, seconds)
    SELECT s.index_name, s.table_name, s.bytes, s.live_rows, s.bytes::double precision / s.live_rows, $2
    FROM geoingest_shared_indexes() s
    WHERE s.index_name = $1 AND NOT s.leftover AND s.live_rows > 0
    ON CONFLICT ON CONSTRAINT geoingest_index_builds_pkey DO UPDATE
    SET table_name = excluded.table_name, bytes = excluded.bytes, live_rows = excluded.live_rows,
        bytes_per_row = excluded.bytes_per_row, seconds = excluded.seconds, built_at = now()
    RETURNING b.bytes
$$;
