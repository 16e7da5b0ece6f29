package postgis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSharedPartitionsVacuumAtOnePercent: autovacuum reaches the shared
// partitions at 1 % dead rows (migration 0020), so that the space a
// replaced generation frees is reused by the next publications instead of
// the heap growing past it; the ledger tables keep migration 0012's 5 %.
func TestSharedPartitionsVacuumAtOnePercent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	factor := func(table string) string {
		t.Helper()
		var v string
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT coalesce((SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) o
			                 WHERE o LIKE 'autovacuum_vacuum_scale_factor=%'), 'unset')
			FROM pg_class c WHERE c.oid = $1::regclass`, table).Scan(&v))
		return v
	}
	require.Equal(t, "0.01", factor("geoingest_store.parcels_shared"))
	require.Equal(t, "0.01", factor("geoingest_store.admin_units_shared"))
	require.Equal(t, "0.05", factor("public.jobs"))
}
