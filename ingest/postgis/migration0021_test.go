package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestMigration0021DownAndUp: version 21 adds the record of the shared
// indexes' rebuilds and its functions; down removes them, up brings them
// back.
func TestMigration0021DownAndUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	has := func() bool {
		var table, fn bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('geoingest_index_builds') IS NOT NULL,
			to_regprocedure('geoingest_shared_indexes()') IS NOT NULL`).Scan(&table, &fn))
		require.Equal(t, table, fn)
		return table
	}
	require.True(t, has())
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_shared_indexes()`).Scan(&n))
	require.Equal(t, 4, n, "two indexes on each shared partition")
	require.NoError(t, migrations.To(url, 20))
	require.False(t, has())
	require.NoError(t, migrations.To(url, migrations.Latest()))
	require.True(t, has())
}
