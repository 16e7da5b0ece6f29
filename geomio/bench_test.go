package geomio

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
)

// BenchmarkRead1M reads the large files in $GEOINGEST_BENCH_DIR
// (parcels_1m.geojson, .geojsonl, .shp from parcelgen and ogr2ogr) and
// reports features/s, the peak Go heap in use (sampled every 10k features)
// and the process's peak RSS (VmHWM, reset before each run). Run one
// sub-benchmark per process for a per-format RSS.
func BenchmarkRead1M(b *testing.B) {
	dir := os.Getenv("GEOINGEST_BENCH_DIR")
	if dir == "" {
		b.Skip("set GEOINGEST_BENCH_DIR to a directory with parcels_1m.{geojson,geojsonl,shp}")
	}
	for _, name := range []string{"parcels_1m.geojson", "parcels_1m.geojsonl", "parcels_1m.shp"} {
		b.Run(strings.TrimPrefix(filepath.Ext(name), "."), func(b *testing.B) {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				b.Skip(err)
			}
			runtime.GC()
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM
			var n int64
			var peakHeap uint64
			var ms runtime.MemStats
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					n++
					if n%10000 == 0 {
						runtime.ReadMemStats(&ms)
						peakHeap = max(peakHeap, ms.HeapInuse)
					}
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "features/s")
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(vmHWM())/(1<<10), "peak-rss-MiB")
		})
	}
}

// vmHWM returns the process's peak resident set size in KiB, or 0.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

// BenchmarkReadFiles reads each file named in $GEOINGEST_BENCH_FILES
// (colon-separated; parcelgen output, for example) to the end and reports
// ns, allocations and bytes allocated per feature, and the process's peak
// RSS. Run it with -cpuprofile to see where decoding spends its time.
// GEOINGEST_BENCH_RAW_ONLY=1 reads with Options.RawHashOnly (the
// prefilter's first pass: each feature's raw hash, nothing decoded).
func BenchmarkReadFiles(b *testing.B) {
	files := os.Getenv("GEOINGEST_BENCH_FILES")
	if files == "" {
		b.Skip("set GEOINGEST_BENCH_FILES to colon-separated files to read")
	}
	rawOnly := os.Getenv("GEOINGEST_BENCH_RAW_ONLY") == "1"
	for _, path := range filepath.SplitList(files) {
		b.Run(filepath.Base(path), func(b *testing.B) {
			runtime.GC()
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := geomiotest.CPUTime()
			var n int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := Open(path, Options{RawHashOnly: rawOnly})
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					n++
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
			b.StopTimer()
			cpu := geomiotest.CPUTime() - cpu0
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/feature")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/feature")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/feature")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n), "B/feature")
			b.ReportMetric(float64(vmHWM())/(1<<10), "peak-rss-MiB")
		})
	}
}
