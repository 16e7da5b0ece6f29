package postgis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSharedParcelGeometriesHaveFinerStatistics: the shared parcels
// partition's geometries are sampled at statistics target 1000 (migration
// 0024), so that small-box estimates are fine enough to order a spatial
// join as on one table; other columns and tables keep the default.
func TestSharedParcelGeometriesHaveFinerStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	target := func(table, column string) int {
		t.Helper()
		var v int
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT a.attstattarget FROM pg_attribute a
			WHERE a.attrelid = $1::regclass AND a.attname = $2`, table, column).Scan(&v))
		return v
	}
	require.Equal(t, 1000, target("geoingest_store.parcels_shared", "geom"))
	require.Equal(t, -1, target("geoingest_store.parcels_shared", "properties"))
	require.Equal(t, -1, target("geoingest_store.admin_units_shared", "geom"))
}
