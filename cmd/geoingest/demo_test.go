package main

import (
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestDemo runs the README's first command against a test database: the
// service on a local inbox, twice.
func TestDemo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": url}, "demo", "--inbox", t.TempDir(),
		"--parcels", "../../testdata/synthetic/parcels_10k.geojson", "--admin", "../../testdata/synthetic/admin.geojson")
	require.Equal(t, 0, code, errOut+out)
	require.Regexp(t, `first delivery.*:\n  serve: 2 events: 2 written, 0 duplicates`, out)
	require.Regexp(t, `second delivery.*:\n  serve: 2 events: 0 written, 2 duplicates stopped at the claim gate`, out)
	require.Regexp(t, `parcels +10000 +1 +150272\.81`, out)
	require.Regexp(t, `admin_units +120 +1 `, out)
	require.Contains(t, out, "the second delivery changed nothing")
	require.Contains(t, out, "geoingest verify: clean")
}
