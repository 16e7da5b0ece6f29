package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestMigration0010DownAndUp: version 10 adds jobs.write_seconds,
// claim_events and the console's indexes; down removes them, keeping every job, and up brings
// them back.
func TestMigration0010DownAndUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	has := func() (column bool, indexes int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_name = 'jobs' AND column_name = 'write_seconds')`).Scan(&column))
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname IN
			('claims_created_idx', 'claims_state_created_idx', 'sources_updated_idx')`).Scan(&indexes))
		var history bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('claim_events') IS NOT NULL").Scan(&history))
		require.Equal(t, column, history, "claim_events goes and comes with write_seconds")
		return column, indexes
	}
	_, err = pool.Exec(ctx, `INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
		VALUES (repeat('a', 64), 'FAILED', 'w', now(), 'b', 'k')`)
	require.NoError(t, err)
	c, n := has()
	require.True(t, c)
	require.Equal(t, 3, n)
	require.NoError(t, migrations.To(url, 7))
	c, n = has()
	require.False(t, c)
	require.Zero(t, n)
	require.NoError(t, migrations.To(url, migrations.Latest()))
	c, n = has()
	require.True(t, c)
	require.Equal(t, 3, n)
	var claims int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM claims").Scan(&claims))
	require.Equal(t, 1, claims)
}
