package postgis

import (
	"context"
	"math"
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
// large version (GEOINGEST_BENCH_N parcels, default 100000), against the
// write of the same version (Service.Run, a partition of its own): the
// scan of every feature's property keys (on the reading goroutine,
// measured as a read of the file with and without it), the guards' work
// in the gate (Store.guard: the stats recorded, the current generation's
// read, the comparison; the version's extent comes from the prepare
// workers), and the extent as the workers measure it (the bounding box of
// every feature's coordinates, timed apart over the file's features). It
// reports guard_pct, their sum as a percentage of the write, and, for
// comparison, server_extent_s: the aggregate over the version's rows that
// the gate ran before the workers measured the extent.
//
// With GEOINGEST_BENCH_REPLACE set, every version replaces the one before
// it (one source: a new version of the same features, a space more at
// the file's end), so that the guards compare it with a current
// generation; its write is then a diff write of unchanged rows (the
// cheapest write a version of that size has), and the first version's
// load is not counted.
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
	var write, extent, keys, gate, bbox time.Duration
	replace := os.Getenv("GEOINGEST_BENCH_REPLACE") != ""
	if replace {
		p := ingest.DefaultParams("parcels")
		src, f, err := localfs.Files{}.Source(path)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, p, f)
		if err != nil {
			b.Fatal(err)
		}
		if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) {
			b.Fatalf("%s: %v", r.Outcome, r.Err)
		}
	}
	for i := 0; i < b.N; i++ {
		p := ingest.DefaultParams("parcels")
		p.PipelineVersion = "bench-" + strconv.Itoa(i)
		if replace {
			p.PipelineVersion = ingest.DefaultParams("parcels").PipelineVersion
			fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.WriteString(" "); err != nil {
				b.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				b.Fatal(err)
			}
		}
		src, f, err := localfs.Files{}.Source(path)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, p, f)
		if err != nil {
			b.Fatal(err)
		}
		g0 := store.guardNanos.Load()
		t0 := time.Now()
		if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) || r.Outcome != ingest.Written {
			b.Fatalf("%s: %v", r.Outcome, r.Err)
		}
		write += time.Since(t0)
		gate += time.Duration(store.guardNanos.Load() - g0)

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
		bbox += bboxTime(b, path)
	}
	b.ReportMetric(write.Seconds()/float64(b.N), "write_s")
	b.ReportMetric(extent.Seconds()/float64(b.N), "server_extent_s")
	b.ReportMetric(gate.Seconds()/float64(b.N), "gate_s")
	b.ReportMetric(bbox.Seconds()/float64(b.N), "bbox_s")
	b.ReportMetric(keys.Seconds()/float64(b.N), "keys_s")
	b.ReportMetric(100*(gate+bbox+keys).Seconds()/write.Seconds(), "guard_pct")
}

// bboxTime is how long the bounding box of the file's coordinates takes,
// as the prepare workers compute it (prepare's bbox.add), apart from the
// read.
func bboxTime(b *testing.B, path string) time.Duration {
	r, err := geomio.Open(path, geomio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var coords [][]float64
	for r.Next() {
		if g := r.Feature().Geom; g != nil {
			coords = append(coords, append([]float64(nil), g.FlatCoords()...))
		}
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	t := time.Now()
	box := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, flat := range coords {
		for i := 0; i+1 < len(flat); i += 2 {
			x, y := flat[i], flat[i+1]
			box[0], box[1], box[2], box[3] = min(box[0], x), min(box[1], y), max(box[2], x), max(box[3], y)
		}
	}
	d := time.Since(t)
	if box[0] > box[2] {
		b.Fatal("no coordinates")
	}
	return d
}
