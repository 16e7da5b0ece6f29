package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestBenchAttachCost measures what a large job's commit costs its
// readers and itself: while one worker writes GEOINGEST_BENCH_ATTACH_JOBS
// large jobs (a partition of their own each, GEOINGEST_BENCH_ATTACH_ROWS
// parcels) one after another, with the compactor folding beside it as
// serve runs it, two readers run a small-box count on parcels in a loop.
// It prints the readers' latency (p50, p99, max, and how many took over
// 100 ms) and the jobs' wall time (p50, max). Set GEOINGEST_BENCH_ATTACH=1
// to run it (docs/benchmarks.md).
func TestBenchAttachCost(t *testing.T) {
	if os.Getenv("GEOINGEST_BENCH_ATTACH") == "" {
		t.Skip("set GEOINGEST_BENCH_ATTACH=1 to measure")
	}
	envInt := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	jobs, rows := envInt("GEOINGEST_BENCH_ATTACH_JOBS", 20), envInt("GEOINGEST_BENCH_ATTACH_ROWS", 5000)
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	ownSources(t, b, dir, 10, 500)
	_, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reads []time.Duration
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				x := 2 + float64((i+r)%10)*0.01
				start := time.Now()
				var n int64
				err := b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels WHERE geom && ST_MakeEnvelope($1::float8, 48, $1::float8 + 0.001, 48.002, 4326)`, x).Scan(&n)
				d := time.Since(start)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				reads = append(reads, d)
				mu.Unlock()
			}
		}(r)
	}
	wg.Add(1)
	go func() { // the compactor, as serve runs it: after each job, and often
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var writes []time.Duration
	for i := 0; i < jobs; i++ {
		p := filepath.Join(dir, fmt.Sprintf("large%03d.geojson", i))
		writeSquares(t, p, 20+i, rows, "v1", time.Now())
		start := time.Now()
		res := b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
		writes = append(writes, time.Since(start))
		require.NoError(t, res.Err)
	}
	close(stop)
	wg.Wait()

	pct := func(d []time.Duration, p float64) time.Duration {
		slices.Sort(d)
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	slow := 0
	for _, d := range reads {
		if d > 100*time.Millisecond {
			slow++
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	t.Logf("readers: %d queries, p50 %s, p99 %s, max %s, %d over 100 ms", len(reads),
		ms(pct(reads, 0.5)), ms(pct(reads, 0.99)), ms(pct(reads, 1)), slow)
	t.Logf("writer: %d jobs of %d parcels, wall p50 %s, max %s", len(writes), rows,
		ms(pct(writes, 0.5)), ms(pct(writes, 1)))
}
