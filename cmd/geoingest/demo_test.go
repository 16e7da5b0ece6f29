package main

import (
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": url}, "demo",
		"--parcels", "../../testdata/synthetic/parcels_10k.geojson", "--admin", "../../testdata/synthetic/admin.geojson")
	require.Equal(t, 0, code, errOut+out)
	require.Regexp(t, `first delivery:\n  written +parcels +parcels_10k.geojson +job [0-9a-f]{12} +10000 features\n  written +admin_units +admin.geojson`, out)
	require.Regexp(t, `\(a duplicate\):\n  already-present +parcels`, out)
	require.Regexp(t, `parcels +10000 +1 `, out)
	require.Regexp(t, `admin_units +120 +1 `, out)
	require.Contains(t, out, "the second delivery changed nothing")
}
