package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedDefault runs the CLI without DATABASE_URL: geoingest starts
// its own cluster in GEOINGEST_HOME, reuses it, and db stop stops it.
func TestEmbeddedDefault(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "geoingest-home-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(home, 0o755)) // the server may run as the postgres user
	env := map[string]string{"GEOINGEST_HOME": home}
	t.Cleanup(func() {
		run(t, env, "db", "stop")
		os.RemoveAll(home)
	})

	code, _, _ := run(t, env, "db", "status")
	require.Equal(t, 3, code, "no cluster yet")
	code, out, errOut := run(t, env, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"outcome":"written"`)
	require.Contains(t, errOut, "initialising a private PostgreSQL cluster in "+home+"/pgdata")

	code, out, errOut = run(t, env, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"outcome":"already-present"`)
	require.NotContains(t, errOut, "initialising", "the cluster is reused")

	code, out, _ = run(t, env, "db", "status")
	require.Equal(t, 0, code)
	require.Contains(t, out, "running")

	// The postmaster has loaded PostGIS: a new connection does not.
	code, out, errOut = run(t, env, "db", "start")
	require.Equal(t, 0, code, errOut)
	conn, err := pgx.Connect(context.Background(), strings.TrimSpace(out))
	require.NoError(t, err)
	var preload string
	require.NoError(t, conn.QueryRow(context.Background(), "SHOW shared_preload_libraries").Scan(&preload))
	conn.Close(context.Background())
	require.Equal(t, "postgis-3", preload)
	code, _, errOut = run(t, env, "db", "stop")
	require.Equal(t, 0, code, errOut)
	code, _, _ = run(t, env, "db", "status")
	require.Equal(t, 3, code)
}
