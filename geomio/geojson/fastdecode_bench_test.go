package geojson

import (
	"bufio"
	"os"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
)

// benchFeatures returns up to n lines of the GeoJSON sequence in
// $GEOINGEST_BENCH_SEQ (parcelgen's .geojsonl), or a fixed parcel.
func benchFeatures(b *testing.B, n int) [][]byte {
	path := os.Getenv("GEOINGEST_BENCH_SEQ")
	if path == "" {
		return [][]byte{[]byte(`{"type":"Feature","properties":{"parcel_id":"BE-0000-0001-6","owner":"Ines Schwarz","land_use":"R2","assessed_value":361053.87,"year":1973},"geometry":{"type":"Polygon","coordinates":[[[13.0904718,52.3383145],[13.0922737,52.3383151],[13.0923086,52.3387449],[13.0924748,52.3392991],[13.090204,52.3394531],[13.0903624,52.3389359],[13.0904718,52.3383145]]]}}`)}
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() && len(out) < n {
		out = append(out, append([]byte(nil), s.Bytes()...))
	}
	return out
}

// BenchmarkFastFeature decodes single features with the fast decoder,
// one goroutine, no I/O: the decoder's own cost per feature.
func BenchmarkFastFeature(b *testing.B) {
	fs := benchFeatures(b, 10000)
	layer := Layer{Name: "p", SRID: 4326}
	var d fastDecoder
	b.ReportAllocs()
	cpu0 := geomiotest.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw := fs[i%len(fs)]
		g, props, ok := d.Feature(raw, false)
		if !ok {
			b.Fatalf("declined %s", raw)
		}
		if _, err := finishFeature(g, props, int64(i), layer, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((geomiotest.CPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkSlowFeature decodes the same features with the reference
// path, for comparison.
func BenchmarkSlowFeature(b *testing.B) {
	fs := benchFeatures(b, 10000)
	layer := Layer{Name: "p", SRID: 4326}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := decodeSeqRecord(fs[i%len(fs)], int64(i), layer, true, DefaultLimits.MaxVertices); err != nil {
			b.Fatal(err)
		}
	}
}
