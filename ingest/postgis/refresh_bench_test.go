package postgis

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
)

// BenchmarkReportRefresh measures, in one run, what the report cells of
// one parcel job cost against that job's write: 120 admin units tiling
// the parcel generator's extent (about 2,000 vertices each by default, as
// a municipality's or a county's digitised boundary; see
// parcel.AdminUnitsDetailed), then, per iteration, a new 25,000-parcel
// source over the extent's middle sixteenth (a county, as the year
// simulation's probe: parcels of about 0.4 ha, some 5 % across a unit
// boundary), written through Service.Run without its refresh, then
// assigned with Store.RefreshParcelJob, timed on its own.
//
// The iterations alternate two ways of computing the cells, so that both
// see the same machine: by the writer as the job streams (the default;
// reportcells.go), which costs the write some time and leaves the
// refresh only their insert, and by the refresh in SQL
// (Store.NoClientReportCells, "sql-" below). It reports the medians of
// the write-gate time (jobs.write_seconds) and of the refresh for each,
// and:
//
//   - sql-refresh/write: the SQL refresh against its write;
//   - cells-cost/write: what the writer's cells cost, the write's growth
//     (median write with them less median write without) plus the
//     refresh that stores them, against the write without them. This is
//     the figure the target (at most 0.3) is about.
//
// The first job of each kind is left out of the medians, and the first
// job with the writer's cells (which also reads the admin generation and
// builds its grids) is reported apart as first-write-ms.
//
// GEOINGEST_BENCH_N sets the parcels per job (default 25000),
// GEOINGEST_BENCH_ADMIN_DETAIL the admin borders' detail (default 9:
// 2^9 segments per border; 0: the 12 of testdata/synthetic).
//
//	go test ./ingest/postgis -run '^$' -bench ReportRefresh -benchtime 12x
func BenchmarkReportRefresh(b *testing.B) {
	n, detail, admin, county := reportBenchInputs(b)
	b.Run(fmt.Sprintf("parcels=%d/admin-detail=%d", n, detail), func(b *testing.B) {
		svc, store, prepare := reportBenchStore(b, admin)
		ctx := context.Background()
		var writes, refreshes [2][]float64 // [0]: the writer's cells, [1]: SQL
		var first float64
		b.ResetTimer()
		for i := 0; i < b.N+2; i++ {
			sqlCells := i%2 == 1
			store.NoClientReportCells = sqlCells
			job := benchFileJob(b, county, fmt.Sprintf("parcels/county-%d.geojson", i), "parcels")
			r := svc.Run(ctx, job)
			if r.Err != nil || r.Features != int64(n) {
				b.Fatalf("outcome %s, %d features: %v", r.Outcome, r.Features, r.Err)
			}
			var write float64
			if err := store.pool.QueryRow(ctx, `SELECT write_seconds FROM jobs WHERE job_id = $1`, job.ID).Scan(&write); err != nil {
				b.Fatal(err)
			}
			t := time.Now()
			res, err := store.RefreshParcelJob(ctx, job.ID, "")
			refresh := time.Since(t).Seconds()
			if err != nil || res.Assigned != 1 || res.Parcels != int64(n) || (res.FromWriter == 1) == sqlCells {
				b.Fatalf("refresh: %+v, %v", res, err)
			}
			kind := map[bool]string{false: "writer", true: "sql"}[sqlCells]
			b.Logf("job %d (cells by %s): write %.0f ms, refresh %.1f ms", i, kind, write*1000, refresh*1000)
			if i < 2 {
				if i == 0 {
					first = write
				}
				continue
			}
			k := i % 2
			writes[k] = append(writes[k], write)
			refreshes[k] = append(refreshes[k], refresh)
		}
		b.StopTimer()
		w0, w1 := median(writes[0]), median(writes[1])
		r0, r1 := median(refreshes[0]), median(refreshes[1])
		b.ReportMetric(w0*1000, "write-ms")
		b.ReportMetric(r0*1000, "refresh-ms")
		b.ReportMetric(w1*1000, "sql-write-ms")
		b.ReportMetric(r1*1000, "sql-refresh-ms")
		b.ReportMetric(r1/w1, "sql-refresh/write")
		b.ReportMetric((w0-w1+r0)/w1, "cells-cost/write")
		b.ReportMetric(first*1000, "first-write-ms")
		b.ReportMetric(float64(prepare.Milliseconds()), "prepare-ms")
		store.cells.mu.Lock()
		b.Logf("the writer's cells, last job: %+v", store.cells.last)
		store.cells.mu.Unlock()
	})
}

// reportBenchInputs writes the report benchmarks' inputs: 120 admin
// units of GEOINGEST_BENCH_ADMIN_DETAIL (default 9) and a county of
// GEOINGEST_BENCH_N parcels (default 25,000).
func reportBenchInputs(b *testing.B) (n, detail int, admin, county string) {
	n = benchEnvInt(b, "GEOINGEST_BENCH_N", 25000)
	detail = benchEnvInt(b, "GEOINGEST_BENCH_ADMIN_DETAIL", 9)
	dir := b.TempDir()
	admin = filepath.Join(dir, "admin.geojson")
	writeBenchAdmin(b, admin, detail)
	county = filepath.Join(dir, "county.geojson")
	writeBenchCounty(b, county, n)
	return n, detail, admin, county
}

// reportBenchStore is a fresh database with the admin layer written and
// its generation prepared by the refresh that follows it (what serve runs
// after an admin job; prepare is its time), jobs' own refreshes off.
func reportBenchStore(b *testing.B, admin string) (svc *ingest.Service, store *Store, prepare time.Duration) {
	svc = setupBench(b)
	svc.NoReportRefresh = true
	store = svc.Store.(*Store)
	ctx := context.Background()
	if r := svc.Run(ctx, benchFileJob(b, admin, "admin/admin.geojson", "admin_units")); r.Err != nil {
		b.Fatal(r.Err)
	}
	t0 := time.Now()
	if _, err := store.RefreshReports(ctx); err != nil {
		b.Fatal(err)
	}
	return svc, store, time.Since(t0)
}

func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return v
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchFileJob is the job of a local file under a bucket key of its own.
func benchFileJob(b *testing.B, path, key, target string) ingest.Job {
	src, f, err := localfs.Files{}.Source(path)
	if err != nil {
		b.Fatal(err)
	}
	src.Key = key
	job, err := ingest.NewJob(src, ingest.DefaultParams(target), f)
	if err != nil {
		b.Fatal(err)
	}
	return job
}

// writeBenchAdmin writes parcel.AdminUnitsDetailed(12, 10, detail), and
// the extra units after them.
func writeBenchAdmin(b testing.TB, path string, detail int, extra ...parcel.Admin) {
	benchWriteFeatures(b, path, func(w *bufio.Writer) {
		for i, a := range append(parcel.AdminUnitsDetailed(12, 10, detail), extra...) {
			if i > 0 {
				w.WriteString(",\n")
			}
			w.Write(parcel.AppendAdminFeature(nil, &a))
		}
	})
}

// writeBenchCounty writes n parcels of the generator's grid moved into the
// middle sixteenth of its extent, as the year simulation's probe.
func writeBenchCounty(b testing.TB, path string, n int) {
	w0, h0 := (parcel.MaxLon-parcel.MinLon)/4, (parcel.MaxLat-parcel.MinLat)/4
	writeBenchParcelsIn(b, path, n, parcel.MinLon+1.5*w0, parcel.MinLat+1.5*h0)
}

// writeBenchParcelsIn writes n parcels of the generator's grid, scaled to
// a quarter of its extent's width and height, from (x0, y0).
func writeBenchParcelsIn(b testing.TB, path string, n int, x0, y0 float64) {
	g := parcel.NewGrid(n)
	box := [4]float64{x0, y0, x0 + (parcel.MaxLon-parcel.MinLon)/4, y0 + (parcel.MaxLat-parcel.MinLat)/4}
	benchWriteFeatures(b, path, func(w *bufio.Writer) {
		var fb []byte
		for i := 0; i < n; i++ {
			f := g.Make(i)
			f.Fit(box)
			if i > 0 {
				w.WriteString(",\n")
			}
			fb = parcel.AppendGeoJSONFeature(fb[:0], &f)
			w.Write(fb)
		}
	})
}

func benchWriteFeatures(b testing.TB, path string, features func(w *bufio.Writer)) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(`{"type":"FeatureCollection","features":[`)
	features(w)
	w.WriteString("]}\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
