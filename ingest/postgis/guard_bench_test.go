package postgis

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// BenchmarkGuardCost measures what the guards add to the write of a
// large version (GEOINGEST_BENCH_N parcels, default 100000): the scan of
// every feature's property keys (on the reading goroutine) and the extent
// of the version's rows (one aggregate in the gate), against the write
// of the same version (Service.Run, a partition of its own). It reports
// guard_pct, the sum of the two as a percentage of the write.
//
//	go test ./ingest/postgis -run '^$' -bench GuardCost -benchtime 1x
func BenchmarkGuardCost(b *testing.B) {
	n := 100000
	if s := os.Getenv("GEOINGEST_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "parcels.geojson")
	writeBenchParcels(b, path, n, false)
	svc := setupBench(b)
	store := svc.Store.(*Store)
	store.OwnPartitionBytes = 1
	ctx := context.Background()
	var write, extent, keys time.Duration
	for i := 0; i < b.N; i++ {
		p := ingest.DefaultParams("parcels")
		p.PipelineVersion = "bench-" + strconv.Itoa(i)
		src, f, err := localfs.Files{}.Source(path)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, p, f)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) {
			b.Fatalf("%s: %v", r.Outcome, r.Err)
		}
		write += time.Since(t0)

		ref, err := store.q.JobRefOf(ctx, job.ID)
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if _, err := store.q.JobExtent(ctx, db.JobExtentParams{TargetTable: "parcels", JobRef: ref}); err != nil {
			b.Fatal(err)
		}
		extent += time.Since(t0)

		// The keys: a read of the file with and without the scan.
		read := func(scan bool) time.Duration {
			r, err := geomio.Open(path, geomio.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			var lr ingest.LayerReader = ingest.LogLayers(r)
			if scan {
				lr = ingest.NewKeysReader(lr)
			}
			t := time.Now()
			for lr.Next() {
			}
			if err := lr.Err(); err != nil {
				b.Fatal(err)
			}
			return time.Since(t)
		}
		plain, scanned := read(false), read(true)
		if d := scanned - plain; d > 0 {
			keys += d
		}
	}
	b.ReportMetric(write.Seconds()/float64(b.N), "write_s")
	b.ReportMetric(extent.Seconds()/float64(b.N), "extent_s")
	b.ReportMetric(keys.Seconds()/float64(b.N), "keys_s")
	b.ReportMetric(100*(extent+keys).Seconds()/write.Seconds(), "guard_pct")
}
