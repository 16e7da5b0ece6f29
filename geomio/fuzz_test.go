package geomio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
)

// fuzzInputDeadline is how long one fuzz input may take to read.
const fuzzInputDeadline = 10 * time.Second

// Fuzz targets: every parser must return features or an *Error for any
// input, never panic, hang or return a non-input error.

// drain reads r to the end, failing the fuzz run on a non-input error.
func fuzzDrain(t *testing.T, path string, opts Options) {
	// A hang or a pathologically slow input is a bug too: crash the
	// worker so that the fuzzer records the input.
	watchdog := time.AfterFunc(fuzzInputDeadline, func() { panic(fmt.Sprintf("%s: input took more than %v", path, fuzzInputDeadline)) })
	defer watchdog.Stop()
	r, err := Open(path, opts)
	if err != nil {
		if !IsInputError(err) {
			t.Fatalf("open: non-input error %T: %v", err, err)
		}
		return
	}
	for r.Next() {
		f := r.Feature()
		if f.Properties == nil {
			t.Fatal("nil properties")
		}
	}
	if err := r.Err(); err != nil && !IsInputError(err) {
		t.Fatalf("next: non-input error %T: %v", err, err)
	}
	// What a preflight asks once the stream ended.
	for _, l := range ReadLayers(r) {
		if l.CRSError != nil && !IsInputError(l.CRSError) {
			t.Fatalf("layer %q: non-input CRS error %T: %v", l.Name, l.CRSError, l.CRSError)
		}
	}
	_, _ = UnreadLayers(r), UnreadTables(r)
	if err := Refusal(r); err != nil && !IsInputError(err) {
		t.Fatalf("refusal: non-input error %T: %v", err, err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !opts.Preflight {
		// The same input as inspect reads it (Options.Preflight).
		opts.Preflight = true
		fuzzDrain(t, path, opts)
	}
}

// fuzzLimits are small, so that inputs reach every limit's check.
var fuzzLimits = Limits{MaxUncompressedBytes: 16 << 20, MaxRecordBytes: 1 << 20, MaxEntries: 100,
	MaxVertices: 1000, MaxPropertyBytes: 1000, MaxProperties: 50, MaxLayers: 3, MaxFeatures: 5000}

func FuzzGeoJSON(f *testing.F) {
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.json")
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.geojson")
	f.Add([]byte(`{"type":"FeatureCollection","features":[],"crs":{"type":"name","properties":{"name":"EPSG:2154"}}}`))
	f.Add([]byte(`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`))
	// Over the vertex and property limits, on the fast and the reference
	// paths.
	f.Add([]byte(`{"type":"FeatureCollection","features":[` + featureJSONText(`{"a":1}`, polygonOf(1001)) + `]}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[` + featureJSONText(`{"a":"`+strings.Repeat("x", 1001)+`"}`, `{"type":"GeometryCollection","geometries":[`+polygonOf(600)+`,`+polygonOf(600)+`]}`) + `]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.geojson")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, Options{Limits: fuzzLimits})
	})
}

func FuzzGeoJSONSeq(f *testing.F) {
	f.Add([]byte("{\"type\":\"Feature\",\"properties\":{\"a\":1},\"geometry\":{\"type\":\"Point\",\"coordinates\":[1,2]}}\n\x1e{\"type\":\"Point\",\"coordinates\":[3,4]}\n"))
	f.Add([]byte("\x1e{\"type\":\"Feature\",\"geometry\":null}\r\n\n"))
	f.Add([]byte(polygonOf(1001) + "\n" + featureJSONText(`{"a":1,"b":2}`, polygonOf(5)) + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.geojsonl")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, Options{Limits: fuzzLimits})
	})
}

// FuzzShapefile fuzzes the .shp bytes against a fixed .dbf with enough
// records.
func FuzzShapefile(f *testing.F) {
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.shp")
	f.Add(polygonSHP(5, 1001, 5)) // a record over the vertex limit
	dbf := makeDBF(0, []dbfCol{{"ID", 'N', 4, 0}}, func() [][]string {
		r := make([][]string, 64)
		for i := range r {
			r[i] = []string{"1"}
		}
		return r
	}())
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.shp"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.dbf"), dbf, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, filepath.Join(dir, "f.shp"), Options{Limits: fuzzLimits})
	})
}

// FuzzDBF fuzzes the .dbf bytes (and a .cpg) against a fixed .shp.
func FuzzDBF(f *testing.F) {
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.dbf")
	shpBytes := makeSHP(make([][2]float64, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.shp"), shpBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.dbf"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, filepath.Join(dir, "f.shp"), Options{Limits: fuzzLimits})
	})
}

func FuzzZip(f *testing.F) {
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.zip")
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.zip")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, Options{Limits: fuzzLimits})
	})
}

func FuzzPRJ(f *testing.F) {
	matches, _ := filepath.Glob(filepath.Join(corpusDir, "*/*.prj"))
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(string(b))
		}
	}
	f.Add(`PROJCRS["x",ID["EPSG",2193]]`)
	f.Add("\uFEFFGEOGCS[\"GCS_WGS_1984\",DATUM[\"D_WGS_1984\",SPHEROID[\"WGS_1984\",6378137.0,298.257223563]],PRIMEM[\"Greenwich\",0.0],UNIT[\"Degree\",0.0174532925199433]]")
	f.Add("urn:ogc:def:crs:EPSG::27700")
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		c, err := crs.Resolve(s)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("resolving took %s", d)
		}
		if err != nil {
			var ie *crs.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		switch c.Method {
		case crs.Authority, crs.Identified:
			if c.EPSG <= 0 {
				t.Fatalf("%s without an EPSG code: %+v", c.Method, c)
			}
		case crs.Custom:
			if c.Definition == "" || len(c.Definition) > 2048 {
				t.Fatalf("custom definition of %d bytes", len(c.Definition))
			}
		default:
			t.Fatalf("method %q", c.Method)
		}
	})
}
