package hatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestFormation starts a formation, writes through the multi-host URL,
// fails over both ways (a planned failover, then a SIGKILL of the
// primary's postmaster), and finds every committed row on the new
// primary each time: the standby is synchronous.
func TestFormation(t *testing.T) {
	c := hatest.Start(t, hatest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	insert := func(v int) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL())
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS hatest (v int)")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "INSERT INTO hatest VALUES ($1)", v)
		require.NoError(t, err)
	}
	count := func() int {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL())
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM hatest").Scan(&n))
		return n
	}
	first, err := c.Primary(ctx)
	require.NoError(t, err)
	require.Equal(t, "node1", first.Name)
	var postgis string
	conn, err := pgx.Connect(ctx, c.URL())
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, "SELECT postgis_version() || ' ' || (SELECT version FROM schema_migrations)").Scan(&postgis))
	conn.Close(ctx)
	t.Logf("postgis and schema: %s", postgis)
	insert(1)

	second, err := c.Failover(ctx)
	require.NoError(t, err)
	require.Equal(t, "node2", second.Name)
	insert(2)
	require.Equal(t, 2, count())
	require.NoError(t, c.WaitHealthy(ctx))

	killed, err := c.KillPrimary(ctx)
	require.NoError(t, err)
	require.Equal(t, second, killed)
	start := time.Now()
	third, err := c.WaitPrimary(ctx, killed)
	require.NoError(t, err)
	t.Logf("a new primary %s %.1f s after the SIGKILL", third.Name, time.Since(start).Seconds())
	insert(3)
	require.Equal(t, 3, count())
	require.NoError(t, c.Rejoin(ctx, killed))
	back, err := c.Failover(ctx)
	require.NoError(t, err)
	require.Equal(t, killed, back, "the rejoined node is a standby that can be promoted again")
	require.Equal(t, 3, count())
}
