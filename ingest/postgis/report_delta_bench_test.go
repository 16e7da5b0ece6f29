package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkReportCellsFromChanges measures what a new version's report
// cells cost when they follow its changes (migration 0041), against
// counting the version whole. The admin layer and the county of
// BenchmarkReportRefresh (GEOINGEST_BENCH_N parcels, default 200,000),
// then, per iteration, a new version of the county with
// GEOINGEST_BENCH_CHANGED_PERMILLE (default 10: 1 %) of its parcels moved
// a little, written through Service.Run without its refresh, then:
//
//   - even iterations: the cells from the base's and the changes (the
//     writer counts nothing): changes-refresh-ms, and write-ms;
//
//   - odd iterations: the base's cells deleted before the write, so the
//     writer counts every parcel as it streams (the way before 0041):
//     tally-write-ms and the refresh storing them, tally-refresh-ms;
//
//   - every iteration, the same version's cells computed whole in SQL
//     (geoingest_report_compute, what the refresh does without the
//     writer's cells): sql-compute-ms.
//
//     GEOINGEST_BENCH_N=200000 go test ./ingest/postgis -run '^$' -bench ReportCellsFromChanges -benchtime 4x
func BenchmarkReportCellsFromChanges(b *testing.B) {
	n := benchEnvInt(b, "GEOINGEST_BENCH_N", 200000)
	permille := benchEnvInt(b, "GEOINGEST_BENCH_CHANGED_PERMILLE", 10)
	detail := benchEnvInt(b, "GEOINGEST_BENCH_ADMIN_DETAIL", 9)
	dir := b.TempDir()
	admin := filepath.Join(dir, "admin.geojson")
	writeBenchAdmin(b, admin, detail)
	county := filepath.Join(dir, "county.geojson")
	writeBenchCounty(b, county, n)
	lines := readFeatureLines(b, county)
	b.Run(fmt.Sprintf("parcels=%d/changed=%s%%", n, strconv.FormatFloat(float64(permille)/10, 'f', -1, 64)), func(b *testing.B) {
		svc, store, _ := reportBenchStore(b, admin)
		ctx := context.Background()
		run := func() (job, base string, write float64) {
			r := svc.Run(ctx, benchFileJob(b, county, "parcels/county.geojson", "parcels"))
			if r.Err != nil || r.Features != int64(n) {
				b.Fatalf("outcome %s, %d features: %v", r.Outcome, r.Features, r.Err)
			}
			if err := store.pool.QueryRow(ctx, `SELECT write_seconds FROM jobs WHERE job_id = $1`, r.JobID).Scan(&write); err != nil {
				b.Fatal(err)
			}
			return r.JobID, r.Replaced, write
		}
		job, _, _ := run()
		if _, err := store.RefreshParcelJob(ctx, job, ""); err != nil {
			b.Fatal(err)
		}
		var writes, refreshes [2][]float64
		var computes []float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			benchVersions++
			ls := append([]string(nil), lines...)
			step := 1000 / permille
			for k := (i + 1) % step; k < len(ls); k += step {
				ls[k] = editFeature(b, ls[k], func(f map[string]any) { shiftGeometry(f, float64(benchVersions)*1e-6) })
			}
			writeFeatureLines(b, county, ls)
			tally := i%2 == 1
			if tally {
				if _, err := store.pool.Exec(ctx, `DELETE FROM report_assignments WHERE parcel_job_id = $1`, job); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			var base string
			var write float64
			job, base, write = run()
			t0 := time.Now()
			res, err := store.RefreshParcelJob(ctx, job, base)
			refresh := time.Since(t0).Seconds()
			if err != nil || res.Assigned != 1 || (res.FromChanges == 1) == tally || (res.FromWriter == 1) != tally {
				b.Fatalf("refresh: %+v, %v", res, err)
			}
			k := map[bool]int{false: 0, true: 1}[tally]
			writes[k] = append(writes[k], write)
			refreshes[k] = append(refreshes[k], refresh)
			t0 = time.Now()
			var units int
			if err := store.pool.QueryRow(ctx, `
				SELECT count(*) FROM geoingest_report_compute($1, geoingest_admin_unit_ids('1'),
				                                              geoingest_overlapping_units(geoingest_admin_unit_ids('1')))`, job).Scan(&units); err != nil {
				b.Fatal(err)
			}
			computes = append(computes, time.Since(t0).Seconds())
			b.Logf("version %d (tally %v): write %.0f ms, refresh %.1f ms, whole in SQL %.0f ms", i, tally, write*1000, refresh*1000, computes[i]*1000)
		}
		b.StopTimer()
		b.ReportMetric(median(writes[0])*1000, "write-ms")
		b.ReportMetric(median(refreshes[0])*1000, "changes-refresh-ms")
		b.ReportMetric(median(writes[1])*1000, "tally-write-ms")
		b.ReportMetric(median(refreshes[1])*1000, "tally-refresh-ms")
		b.ReportMetric(median(computes)*1000, "sql-compute-ms")
	})
	_ = os.Remove(county)
}

// benchVersions numbers the versions BenchmarkReportCellsFromChanges
// writes, across its runs, so that each is new.
var benchVersions int
