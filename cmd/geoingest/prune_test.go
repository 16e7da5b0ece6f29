package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestPruneCommand: prune removes an old replaced version's ledger row
// and claim (a dry run only counts it), keeps the current one, and verify
// stays clean; flags it cannot use are a usage error.
func TestPruneCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	path := filepath.Join(t.TempDir(), "county.geojson")
	b, err := os.ReadFile(bristolMSOA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	code, out, errOut := run(t, env, "ingest", "--target", "parcels", path)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	// A newer version of the same file: the first is replaced.
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	code, out, errOut = run(t, env, "ingest", "--target", "parcels", path)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)

	code, out, errOut = run(t, env, "prune", "--keep-superseded", "0", "--prune-min-age", "0s", "--dry-run")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "dry run: 1 ledger rows")
	code, out, errOut = run(t, env, "prune", "--keep-superseded", "0", "--prune-min-age", "0s")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "pruned: 1 ledger rows (1 claims")
	code, out, _ = run(t, env, "verify")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "checked 1 jobs (1 current)")

	code, _, _ = run(t, env, "prune", "--keep-superseded", "-1")
	require.Equal(t, 2, code)
}
