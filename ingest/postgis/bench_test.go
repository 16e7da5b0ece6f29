package postgis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkIngest measures the whole ingest (claim, read, COPY into a
// partition of the job's own or into the shared partition, the server's
// validity, area and checksum pass, ledger, commit) of synthetic parcels
// through Service.Run, in this process: features per second and the Go
// heap's peak while a job runs (sampled every 10 ms), which must not grow
// with the file's size. GEOINGEST_BENCH_N sets the parcels per file (default
// 20000). scripts/bench-ingest.sh measures the built binary's peak RSS
// against ogr2ogr on 100k and 1M parcels; see docs/benchmarks.md.
//
//	go test ./ingest/postgis -run '^$' -bench Ingest -benchtime 3x
func BenchmarkIngest(b *testing.B) {
	n := 20000
	if s := os.Getenv("GEOINGEST_BENCH_N"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	files := map[string]string{
		"geojson":  filepath.Join(dir, "parcels.geojson"),
		"geojsonl": filepath.Join(dir, "parcels.geojsonl"),
	}
	writeBenchParcels(b, files["geojson"], n, false)
	writeBenchParcels(b, files["geojsonl"], n, true)
	for _, c := range []struct {
		format, partition string
		ownBytes          int64
	}{{"geojson", "own", 1}, {"geojsonl", "own", 1}, {"geojson", "shared", 1 << 40}} {
		format := c.format
		b.Run(fmt.Sprintf("%s/%d/%s-partition", format, n, c.partition), func(b *testing.B) {
			bb := setupBench(b)
			bb.Store.(*Store).OwnPartitionBytes = c.ownBytes
			b.ReportAllocs()
			ctx := context.Background()
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := ingest.DefaultParams("parcels")
				p.PipelineVersion = fmt.Sprintf("bench-%d", i) // a new key each time
				src, f, err := localfs.Files{}.Source(files[format])
				if err != nil {
					b.Fatal(err)
				}
				job, err := ingest.NewJob(src, p, f)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				stop := sampleHeap(&peak)
				r := bb.Run(ctx, job)
				stop()
				if r.Err != nil || r.Features != int64(n) {
					b.Fatalf("outcome %s, %d features: %v", r.Outcome, r.Features, r.Err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "features/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// setupBench gives a benchmark its own database and a quiet Service on it.
func setupBench(b *testing.B) *ingest.Service {
	pool, err := pgxpool.New(context.Background(), pgtest.NewDB(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return newTestService(pool, ingest.NewMetrics(prometheus.NewRegistry()), log)
}

// sampleHeap records the largest HeapInuse seen into *peak until the
// returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > *peak {
				*peak = ms.HeapInuse
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// writeBenchParcels writes n square parcels (about 10 m, in a grid near
// Paris) with a few attributes as a FeatureCollection or, with seq, one
// Feature per line.
func writeBenchParcels(b *testing.B, path string, n int, seq bool) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if !seq {
		w.WriteString(`{"type":"FeatureCollection","features":[` + "\n")
	}
	const d = 0.0001
	for i := 0; i < n; i++ {
		x, y := 2.0+float64(i%1000)*d*1.5, 48.0+float64(i/1000)*d*1.5
		if i > 0 && !seq {
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, `{"type":"Feature","properties":{"parcel_id":"P%07d","owner":"Propriétaire %d","land_use":"résidentiel","assessed_value":%d.5,"year":%d},`+
			`"geometry":{"type":"Polygon","coordinates":[[[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f]]]}}`,
			i, i%977, 100000+i, 1950+i%70, x, y, x+d, y, x+d, y+d, x, y+d, x, y)
		if seq {
			w.WriteString("\n")
		}
	}
	if !seq {
		w.WriteString("]}\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
