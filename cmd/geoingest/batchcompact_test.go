package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// writeSquareSource writes a GeoJSON of n 20 m squares in column x of its
// own, so that sources do not overlap.
func writeSquareSource(t *testing.T, path string, x, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		lon, lat := 2+float64(x)*0.01+float64(i%10)*0.0003, 48+float64(i/10)*0.0003
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			i, lon, lat, lon+0.0002, lat, lon+0.0002, lat+0.0002, lon, lat)
	}
	b.WriteString(`]}`)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// readShape is what a reader of parcels meets: the partitions under it,
// the current own partitions, and the distinct tables a bbox query's plan
// scans.
func readShape(t *testing.T, db string) (partitions, own int64, scanned []string) {
	t.Helper()
	partitions = queryInt(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`)
	own = queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0 AND status = 'current'`)
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `EXPLAIN (COSTS OFF)
		SELECT id, area_m2 FROM parcels WHERE ST_Intersects(geom, ST_MakeEnvelope(2.0, 48.0, 2.0007, 48.0007, 4326))`)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	seen := map[string]bool{}
	// A table's scan node names it (a Bitmap Index Scan names an index
	// of the table its Bitmap Heap Scan names).
	for _, m := range regexp.MustCompile(`(?m)(?:^|->)\s*(?:Parallel )?(?:Seq|Index|Index Only|Bitmap Heap|Tid|Sample) Scan (?:Backward )?(?:using \S+ )?on (\S+)`).FindAllStringSubmatch(strings.Join(plan, "\n"), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			scanned = append(scanned, m[1])
		}
	}
	return partitions, own, scanned
}

// TestBatchCommandsLeaveReadsFast: the batch commands run the compactor as
// serve does, so that a batch load needs no separate `compact`: a backfill
// of 40 sources, each written into a partition of its own, leaves only the
// shared partition, and a bbox query's plan scans that one table; the same
// backfill with --no-compact leaves 40 partitions for the plan to visit.
// One `ingest` into an empty table leaves its partition where it is (a
// read visits one table; folding would copy the load twice); several
// `ingest` processes at once leave the shared partition only, and the
// table's statistics as a whole.
func TestBatchCommandsLeaveReadsFast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 40
	for i := 0; i < n; i++ {
		writeSquareSource(t, filepath.Join(dir, fmt.Sprintf("s%03d.geojson", i)), i, 20)
	}

	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	code, out, errOut := run(t, env, "backfill", "--dir", dir, "--workers", "2")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, fmt.Sprintf("%d written", n))
	require.NotContains(t, errOut, "warning")
	partitions, own, scanned := readShape(t, db)
	require.EqualValues(t, 1, partitions, "only the shared partition is left")
	require.Zero(t, own)
	require.Len(t, scanned, 1, "the bbox query scans one table: %v", scanned)
	require.EqualValues(t, n*20, queryInt(t, db, `SELECT count(*) FROM geoingest_current_parcels`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	// Without the compactor the same backfill leaves a partition per source.
	db2 := pgtest.NewDB(t)
	env2 := map[string]string{"DATABASE_URL": db2, "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	code, out, errOut = run(t, env2, "backfill", "--dir", dir, "--no-compact")
	require.Equal(t, 0, code, out+errOut)
	partitions, own, scanned = readShape(t, db2)
	require.EqualValues(t, n+1, partitions)
	require.EqualValues(t, n, own)
	require.Len(t, scanned, n+1)

	// One ingest into an empty table: its partition stays, the only one
	// with rows.
	db3 := pgtest.NewDB(t)
	env3 := map[string]string{"DATABASE_URL": db3, "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	code, out, errOut = run(t, env3, "ingest", filepath.Join(dir, "s000.geojson"))
	require.Equal(t, 0, code, out+errOut)
	_, own, _ = readShape(t, db3)
	require.EqualValues(t, 1, own)

	// Four ingest processes at once, two files each: the last to finish
	// waits for the others' compaction and folds what is left.
	var wg sync.WaitGroup
	outs := make([]string, 4)
	errs := make([]error, 4)
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(binary, "ingest", filepath.Join(dir, fmt.Sprintf("s%03d.geojson", 1+2*p)), filepath.Join(dir, fmt.Sprintf("s%03d.geojson", 2+2*p)))
			cmd.Env = append(os.Environ(), "DATABASE_URL="+db3, "GEOINGEST_OWN_PARTITION_BYTES=1")
			b, err := cmd.CombinedOutput()
			outs[p], errs[p] = string(b), err
		}()
	}
	wg.Wait()
	for p := range errs {
		require.NoError(t, errs[p], outs[p])
		require.NotContains(t, outs[p], "warning", outs[p])
	}
	partitions, own, scanned = readShape(t, db3)
	require.EqualValues(t, 1, partitions)
	require.Zero(t, own)
	require.Len(t, scanned, 1, "%v", scanned)
	require.EqualValues(t, 9*20, queryInt(t, db3, `SELECT count(*) FROM geoingest_current_parcels`))
	// The table's statistics as a whole are left too, gathered after the
	// last fold (each process analyzes what its rounds folded).
	require.EqualValues(t, 9*20, queryInt(t, db3, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'geoingest_store.parcels'::regclass`))
}
