package kml

import (
	"os"
	"testing"
)

// BenchmarkRead scans and reads every layer of the KML file named by
// GEOINGEST_KML_BENCH (skipped when unset), e.g. one made with
// `ogr2ogr -f KML` from the parcels of scripts/bench-ingest.sh.
func BenchmarkRead(b *testing.B) {
	path := os.Getenv("GEOINGEST_KML_BENCH")
	if path == "" {
		b.Skip("GEOINGEST_KML_BENCH names no KML file")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b.SetBytes(st.Size())
	lim := Limits{MaxTokenBytes: 16 << 20, MaxVertices: 350_000, MaxLayers: 1000, MaxFields: 10_000}
	for i := 0; i < b.N; i++ {
		d, err := Scan(f, st.Size(), "bench", lim)
		if err != nil {
			b.Fatal(err)
		}
		for l := range d.Layers {
			r, err := d.Layer(l)
			if err != nil {
				b.Fatal(err)
			}
			for r.Next() {
			}
			if err := r.Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
