package postgis

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestSharedPartitionPlansStaySerial: a small-bbox query through parcels,
// prepared as map servers prepare it and run with its generic plan, is
// planned without parallel workers on the shared partition (migration
// 0018), even where the planner is told parallel workers cost nothing; a
// parallel plan's worker start-up costs such a query tens of times its
// index scan. The same query on a table without the setting goes parallel,
// so the test can tell the two apart.
func TestSharedPartitionPlansStaySerial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	p := filepath.Join(t.TempDir(), "squares.geojson")
	writeSquares(t, p, 0, 50, "squares", time.Now())
	res := b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)

	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, s := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`SET parallel_setup_cost = 0`, `SET parallel_tuple_cost = 0`,
		`SET min_parallel_table_scan_size = 0`, `SET min_parallel_index_scan_size = 0`,
		`SET enable_indexscan = off`, `SET enable_bitmapscan = off`, // a scan the workers could share
		`CREATE TABLE serial_probe AS SELECT * FROM parcels`,
		`ANALYZE serial_probe`,
	} {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	plan := func(table string) string {
		t.Helper()
		name := "probe_" + strings.ReplaceAll(table, ".", "_")
		_, err := conn.Exec(ctx, `PREPARE `+name+`(float8, float8, float8, float8) AS SELECT p.id, p.geom FROM `+table+
			` p WHERE ST_Intersects(p.geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`)
		require.NoError(t, err)
		return planOf(t, conn, `EXECUTE `+name+`(0, 0, 0.001, 0.001)`)
	}
	require.Contains(t, plan("serial_probe"), "Gather", "the planner must want workers for a table without the setting")
	got := plan("parcels")
	require.Contains(t, got, "parcels_shared", got)
	require.NotContains(t, got, "Gather", "the shared partition must be scanned without parallel workers:\n%s", got)
}
