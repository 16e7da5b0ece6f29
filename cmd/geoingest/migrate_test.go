package main

import (
	"fmt"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/stretchr/testify/require"
)

// TestMigrateForceRepairsDirtySchema: a migration that fails leaves the
// schema dirty at its version with none of its changes; every command then
// refuses to start with a message naming `geoingest migrate --force N`,
// and that command (after the cause is fixed) marks the version before it
// clean, so that `geoingest migrate` applies the migration again
// (docs/operations.md, "A dirty migration").
func TestMigrateForceRepairsDirtySchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	// The migration made to fail is 7 (it creates geoingest_set_area),
	// whatever the later ones.
	const failing uint = 7
	before := failing - 1
	forceHint := fmt.Sprintf("geoingest migrate --force %d", before)

	// The schema before migration 7, and an object in the way of it.
	require.NoError(t, migrations.To(db, before))
	execEach(t, db, `CREATE FUNCTION geoingest_set_area() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$`)
	generated := func() string {
		return queryString(t, db, `SELECT attgenerated::text FROM pg_attribute WHERE attrelid = 'parcels'::regclass AND attname = 'area_m2'`)
	}
	require.Equal(t, "s", generated(), "before migration 7, area_m2 is a generated column")

	code, _, errOut := run(t, env, "migrate")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, fmt.Sprintf("migration %d failed and was rolled back", failing))
	require.Contains(t, errOut, "already exists")
	require.Contains(t, errOut, forceHint)
	require.EqualValues(t, failing, queryInt(t, db, `SELECT version FROM schema_migrations WHERE dirty`))
	require.Equal(t, "s", generated(), "the failed migration left its first statement behind")

	// Every command refuses a dirty schema, naming what to run.
	for _, args := range [][]string{{"verify"}, {"jobs", "list"}, {"migrate"}} {
		code, _, errOut = run(t, env, args...)
		require.Equal(t, 1, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, fmt.Sprintf("schema version %d is dirty", failing), args)
		require.Contains(t, errOut, forceHint, args)
	}

	// --force checks its argument before touching anything.
	code, _, errOut = run(t, env, "migrate", "--force", "99")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no migration 99 in this binary")
	code, _, errOut = run(t, env, "migrate", "--force", "two")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "want a schema version")
	require.EqualValues(t, failing, queryInt(t, db, `SELECT version FROM schema_migrations WHERE dirty`))

	// Fixed: the version before is forced clean, and migrate applies the
	// migration again.
	execEach(t, db, `DROP FUNCTION geoingest_set_area()`)
	code, out, errOut := run(t, env, "migrate", "--force", fmt.Sprint(before))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("schema version %d (dirty) forced to %d, clean", failing, before))
	require.EqualValues(t, before, queryInt(t, db, `SELECT version FROM schema_migrations WHERE NOT dirty`))

	code, _, errOut = run(t, env, "migrate", "--force", fmt.Sprint(before))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is not dirty: nothing to force")

	code, out, errOut = run(t, env, "migrate")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, fmt.Sprintf("schema at version %d\n", migrations.Latest()), out)
	require.Equal(t, "", generated(), "migration 7 applied: area_m2 is a plain column")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// TestSchemaNewerThanBinary: an older binary does not start on a schema
// that a newer release migrated, and says so.
func TestSchemaNewerThanBinary(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	latest := migrations.Latest()
	execEach(t, db, fmt.Sprintf(`UPDATE schema_migrations SET version = %d`, latest+1))
	code, _, errOut := run(t, map[string]string{"DATABASE_URL": db}, "verify")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, fmt.Sprintf("schema is at version %d, newer than this binary's %d", latest+1, latest))
}
