package postgis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/geoingest/geoingest/postgistest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// downsFrom is the oldest migration whose down TestRecentDownsRestoreTheSchema
// checks: the write gate's diff, prefilter and hash migrations and all later.
const downsFrom = 44

// TestRecentDownsRestoreTheSchema: a database at the latest version,
// migrated down one step at a time to before migration 0044, has after each
// step exactly the schema of a new database migrated up to that version
// only (every function's definition, every column with its type, default
// and nullability, every index, view and trigger): each down migration
// restores what its up replaced, so that a roll-back runs the previous
// release's SQL, not a mix.
func TestRecentDownsRestoreTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stepped := pgtest.NewDB(t)
	latest := migrations.Latest()
	require.Greater(t, latest, uint(downsFrom))
	for v := latest - 1; v >= downsFrom-1; v-- {
		require.NoError(t, migrations.To(stepped, v), "down to %d", v)
		fresh := blankDB(t)
		require.NoError(t, migrations.To(fresh, v), "up to %d", v)
		got, want := schemaOf(ctx, t, stepped), schemaOf(ctx, t, fresh)
		require.NotEmpty(t, want)
		if got != want {
			t.Fatalf("migration %04d's down leaves a schema unlike version %d's:\n%s", v+1, v, lineDiff(want, got))
		}
	}
	require.NoError(t, migrations.To(stepped, latest), "up again to %d", latest)
	require.Equal(t, schemaOf(ctx, t, pgtest.NewDB(t)), schemaOf(ctx, t, stepped), "up again: the latest schema")
}

// blankDB is a new empty database on the test server, dropped at cleanup.
func blankDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin := pgtest.AdminURL(t)
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var name string
	require.NoError(t, conn.QueryRow(ctx, `SELECT 'geoingest_blank_' || pg_backend_pid() || '_' || (extract(epoch FROM clock_timestamp()) * 1e6)::bigint`).Scan(&name))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	return postgistest.WithDatabase(admin, name)
}

// schemaOf lists a database's own schema objects (not those of
// extensions or of the system), one sorted line each.
func schemaOf(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
WITH ns AS (SELECT oid FROM pg_namespace
            WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg_temp%'
              AND nspname NOT LIKE 'pg_toast_temp%'),
     ext AS (SELECT classid, objid FROM pg_depend WHERE deptype = 'e')
SELECT 'function ' || p.oid::regprocedure::text || E'\n' || pg_get_functiondef(p.oid)
FROM pg_proc p
WHERE p.pronamespace IN (SELECT oid FROM ns) AND p.prokind IN ('f', 'p', 'w')
  AND NOT EXISTS (SELECT FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
UNION ALL
SELECT 'column ' || c.oid::regclass::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND NOT EXISTS (SELECT FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relnamespace IN (SELECT oid FROM ns)
  AND NOT EXISTS (SELECT FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = i.indrelid)
UNION ALL
SELECT 'constraint ' || r.conrelid::regclass::text || ' ' || r.conname || ' ' || pg_get_constraintdef(r.oid)
FROM pg_constraint r
WHERE r.connamespace IN (SELECT oid FROM ns) AND r.conrelid <> 0
  AND NOT EXISTS (SELECT FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = r.conrelid)
UNION ALL
SELECT 'view ' || c.oid::regclass::text || E'\n' || pg_get_viewdef(c.oid)
FROM pg_class c
WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('v', 'm')
  AND NOT EXISTS (SELECT FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(g.oid)
FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
WHERE NOT g.tgisinternal AND c.relnamespace IN (SELECT oid FROM ns)
ORDER BY 1`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// lineDiff lists the lines of want missing from got, and those of got
// not in want.
func lineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for l, n := range w {
		if g[l] < n {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for l, n := range g {
		if w[l] < n {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
