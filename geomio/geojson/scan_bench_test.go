package geojson

import (
	"os"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/geoingest/geoingest/geomio/jsonscan"
)

// benchCollection returns the FeatureCollection in $GEOINGEST_BENCH_FC
// (parcelgen's .geojson; read whole, so keep it to 100k parcels).
func benchCollection(b *testing.B) []byte {
	path := os.Getenv("GEOINGEST_BENCH_FC")
	if path == "" {
		b.Skip("set GEOINGEST_BENCH_FC to a FeatureCollection")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkSkipNested measures the splitter's scan of the features
// array, in bytes per second.
func BenchmarkSkipNested(b *testing.B) {
	data := benchCollection(b)
	start := 0
	for i, c := range data {
		if c == '[' {
			start = i
			break
		}
	}
	b.SetBytes(int64(len(data) - start))
	cpu0 := geomiotest.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if jsonscan.SkipNested(data, start) < 0 {
			b.Fatal("features array does not end")
		}
	}
	b.ReportMetric(float64((geomiotest.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/float64(len(data)-start), "cpu-ns/byte")
}

// BenchmarkSkipDeep measures the crs pre-scan's loop over the features
// array.
func BenchmarkSkipDeep(b *testing.B) {
	data := benchCollection(b)
	start := 0
	for i, c := range data {
		if c == '[' {
			start = i
			break
		}
	}
	b.SetBytes(int64(len(data) - start))
	cpu0 := geomiotest.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		depth := 1
		var inStr, esc bool
		skipDeep(data, start, &depth, &inStr, &esc)
	}
	b.ReportMetric(float64((geomiotest.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/float64(len(data)-start), "cpu-ns/byte")
}

// skipNestedBytewise is skipNested with byte-at-a-time loops, for
// comparison.
func skipNestedBytewise(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch jsonscan.StructClass[b[i]] {
		case 0:
			i++
			for i < len(b) && jsonscan.StructClass[b[i]] == 0 {
				i++
			}
		case 1:
			i++
			for {
				for i < len(b) && !jsonscan.QuoteOrBackslash[b[i]] {
					i++
				}
				if i >= len(b) {
					return -1
				}
				if b[i] == '"' {
					i++
					break
				}
				i += 2
			}
		case 2:
			depth++
			i++
		case 3:
			depth--
			i++
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func BenchmarkSkipNestedBytewise(b *testing.B) {
	data := benchCollection(b)
	start := 0
	for i, c := range data {
		if c == '[' {
			start = i
			break
		}
	}
	b.SetBytes(int64(len(data) - start))
	cpu0 := geomiotest.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if skipNestedBytewise(data, start) < 0 {
			b.Fatal("features array does not end")
		}
	}
	b.ReportMetric(float64((geomiotest.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/float64(len(data)-start), "cpu-ns/byte")
}
