package geoparquet_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

func projJSON(t testing.TB, name string, keepID bool) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	if !keepID {
		// The root's "id" member: without it PROJ must identify the CRS.
		b = regexp.MustCompile(`,"id":\{"authority":"EPSG","code":\d+\}\}\s*$`).ReplaceAll(bytes.TrimSpace(b), []byte("}"))
		require.NotContains(t, string(b[len(b)-60:]), `"id"`)
	}
	return bytes.TrimSpace(b)
}

// fromFile writes the features of src to dst as GeoParquet.
func fromFile(t testing.TB, src, dst string, o testfiles.GeoParquetOptions) int {
	t.Helper()
	r, err := geomio.Open(src, geomio.Options{})
	require.NoError(t, err)
	defer r.Close()
	n := testfiles.GeoParquetFrom(t, dst, func(yield func(geom.T, []byte) bool) {
		for r.Next() {
			if !yield(r.Feature().Geom, r.Feature().Properties) {
				return
			}
		}
	}, o)
	require.NoError(t, r.Err())
	return n
}

func readAll(t testing.TB, path string, opts geomio.Options) (geomio.Layer, []geomio.Feature, error) {
	t.Helper()
	r, err := geomio.Open(path, opts)
	if err != nil {
		return geomio.Layer{}, nil, err
	}
	defer r.Close()
	var fs []geomio.Feature
	for r.Next() {
		f := r.Feature()
		f.Properties = append([]byte(nil), f.Properties...)
		fs = append(fs, f)
	}
	return r.Layer(), fs, r.Err()
}

// TestGeoParquetSameAsSource writes corpus files as GeoParquet and reads
// both: the same features, coordinates and CRS, whatever the row groups.
func TestGeoParquetSameAsSource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		crs       json.RawMessage
		srid      int
		method    crs.Method
	}{
		{name: "no crs is CRS84", src: "../../testdata/synthetic/parcels_10k.geojson", srid: 4326, method: crs.Default},
		{name: "PROJJSON with its EPSG id", src: "../../testdata/corpus/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson",
			crs: projJSON(t, "epsg27700.projjson", true), srid: 27700, method: crs.Authority},
		{name: "PROJJSON without id, UTM zone", src: "../../testdata/corpus/utm18_polygon_a/a_utm.shp",
			crs: projJSON(t, "epsg26918.projjson", false), srid: 26918, method: crs.Identified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), "out.parquet")
			n := fromFile(t, tc.src, dst, testfiles.GeoParquetOptions{CRS: tc.crs, RowGroupRows: 777})
			_, want, err := readAll(t, tc.src, geomio.Options{})
			require.NoError(t, err)
			layer, got, err := readAll(t, dst, geomio.Options{})
			require.NoError(t, err)
			require.Equal(t, n, len(got))
			require.Len(t, got, len(want))
			require.Equal(t, geomio.FormatGeoParquet, layer.Format)
			require.Equal(t, "out", layer.Name)
			require.Equal(t, tc.srid, layer.SRID)
			require.Equal(t, tc.method, layer.CRS.Method, "%+v", layer.CRS)
			for i := range want {
				require.Equal(t, int64(i), got[i].Index)
				require.Equal(t, "out", got[i].Layer)
				require.IsType(t, &geom.MultiPolygon{}, got[i].Geom)
				require.Equal(t, want[i].Geom.FlatCoords(), got[i].Geom.FlatCoords(), "feature %d", i)
				require.Equal(t, want[i].Geom.(*geom.MultiPolygon).Endss(), got[i].Geom.(*geom.MultiPolygon).Endss())
				require.Equal(t, tc.srid, got[i].Geom.SRID())
			}
			if len(got) < 2 {
				return
			}
			var p map[string]any
			require.NoError(t, json.Unmarshal(got[1].Properties, &p))
			require.Equal(t, map[string]any{"fid": 1.0, "name": "feature", "score": 0.25, "flag": false, "day": "2024-01-02",
				"properties": mustUnmarshal(t, want[1].Properties)}, p)
			require.NoError(t, json.Unmarshal(got[0].Properties, &p))
			require.Nil(t, p["name"])
		})
	}
}

func mustUnmarshal(t testing.TB, b []byte) any {
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}

func wkbOf(t testing.TB, g geom.T) []byte {
	var buf bytes.Buffer
	require.NoError(t, wkb.Write(&buf, wkb.NDR, g))
	return buf.Bytes()
}

func rows(rs ...testfiles.GeoParquetRow) func(func(testfiles.GeoParquetRow) bool) {
	return func(yield func(testfiles.GeoParquetRow) bool) {
		for _, r := range rs {
			if !yield(r) {
				return
			}
		}
	}
}

var square = geom.NewPolygonFlat(geom.XYZ, []float64{0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1}, []int{15})

// TestGeoParquetRows: null geometries, other types passed through for the
// policies, Z dropped, an explicit null crs unknown, a source SRID wins.
func TestGeoParquetRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := testfiles.GeoParquet(t, filepath.Join(dir, "rows.geoparquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square)},
		testfiles.GeoParquetRow{},
		testfiles.GeoParquetRow{Geometry: wkbOf(t, geom.NewPointFlat(geom.XY, []float64{3, 4}))},
	), testfiles.GeoParquetOptions{CRS: json.RawMessage("null")})
	layer, fs, err := readAll(t, path, geomio.Options{})
	require.NoError(t, err)
	require.Equal(t, 0, layer.SRID, "an explicit null crs is unknown")
	require.Len(t, fs, 3)
	require.Equal(t, []float64{0, 0, 1, 0, 1, 1, 0, 1, 0, 0}, fs[0].Geom.FlatCoords())
	require.Equal(t, geom.XY, fs[0].Geom.Layout())
	require.Nil(t, fs[1].Geom)
	require.IsType(t, &geom.Point{}, fs[2].Geom)

	layer, _, err = readAll(t, path, geomio.Options{SourceSRID: 2154})
	require.NoError(t, err)
	require.Equal(t, 2154, layer.SRID)
	require.Equal(t, crs.Override, layer.CRS.Method)
}

// TestGeoParquetRefused: what cannot be read is an *Error naming the file
// and the problem, never a panic.
func TestGeoParquetRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := fromFile(t, "../../testdata/synthetic/parcels_10k.geojson", filepath.Join(dir, "good.parquet"),
		testfiles.GeoParquetOptions{RowGroupRows: 500})
	require.Equal(t, 10000, good)
	goodBytes, err := os.ReadFile(filepath.Join(dir, "good.parquet"))
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	flipped := append([]byte(nil), goodBytes...)
	for i := len(flipped) / 3; i < len(flipped)/3+64; i++ {
		flipped[i] ^= 0x5A
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"truncated", write("truncated.parquet", goodBytes[:len(goodBytes)/2]), "invalid GeoParquet"},
		{"header only", write("header.parquet", []byte("PAR1")), "invalid GeoParquet"},
		{"corrupt pages", write("flipped.parquet", flipped), "invalid GeoParquet"},
		{"plain parquet", testfiles.GeoParquet(t, filepath.Join(dir, "plain.parquet"), rows(testfiles.GeoParquetRow{}),
			testfiles.GeoParquetOptions{Geo: "x"}), "not valid JSON"},
		{"geoarrow encoding", testfiles.GeoParquet(t, filepath.Join(dir, "arrow.parquet"), rows(testfiles.GeoParquetRow{}),
			testfiles.GeoParquetOptions{Geo: `{"version":"1.1.0","primary_column":"geometry","columns":{"geometry":{"encoding":"polygon"}}}`}), `encoding "polygon"`},
		{"missing primary column", testfiles.GeoParquet(t, filepath.Join(dir, "nocol.parquet"), rows(testfiles.GeoParquetRow{}),
			testfiles.GeoParquetOptions{Geo: `{"version":"1.1.0","primary_column":"geom","columns":{"geom":{"encoding":"WKB"}}}`}), `"geom" is not a top-level column`},
		{"bad WKB", testfiles.GeoParquet(t, filepath.Join(dir, "badwkb.parquet"), rows(testfiles.GeoParquetRow{Geometry: wkbOf(t, square)}, testfiles.GeoParquetRow{Geometry: []byte{1, 3, 0, 0, 0, 255, 255, 255, 127}}),
			testfiles.GeoParquetOptions{}), "feature 1: invalid geometry"},
		{"projected coordinates without crs", testfiles.GeoParquet(t, filepath.Join(dir, "utm.parquet"), rows(testfiles.GeoParquetRow{Geometry: wkbOf(t, geom.NewPointFlat(geom.XY, []float64{500000, 4500000}))}),
			testfiles.GeoParquetOptions{}), "OGC:CRS84"},
		{"unreadable PROJJSON", testfiles.GeoParquet(t, filepath.Join(dir, "badcrs.parquet"), rows(testfiles.GeoParquetRow{}),
			testfiles.GeoParquetOptions{CRS: json.RawMessage(`{"type":"ProjectedCRS","name":"nothing"}`)}), "unusable CRS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readAll(t, tc.path, geomio.Options{})
			require.Error(t, err)
			var e *geomio.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.Equal(t, tc.path, e.File)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// FuzzGeoParquet: any bytes given to Open as a .parquet file give
// features or an *Error, never a panic.
func FuzzGeoParquet(f *testing.F) {
	dir := f.TempDir()
	p := testfiles.GeoParquet(f, filepath.Join(dir, "seed.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(f, square), Properties: `{"a":1}`},
		testfiles.GeoParquetRow{},
	), testfiles.GeoParquetOptions{RowGroupRows: 1})
	seed, err := os.ReadFile(p)
	require.NoError(f, err)
	f.Add(seed)
	f.Add(seed[:len(seed)-10])
	f.Add([]byte("PAR1PAR1"))
	// Page headers that claim 1 GiB, uncompressed and compressed
	// (TestGeoParquetHostilePageHeader).
	f.Add(withPageHeader(f, seed, func(h *format.PageHeader) { h.UncompressedPageSize = 1 << 30 }))
	f.Add(withPageHeader(f, seed, func(h *format.PageHeader) { h.CompressedPageSize = 1 << 30 }))
	// A version 1 data page that claims 2^31-1 values
	// (TestGeoParquetHostileValueCount).
	v1 := testfiles.GeoParquet(f, filepath.Join(dir, "v1.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(f, square), Properties: `{"a":1}`},
	), testfiles.GeoParquetOptions{DataPageV1: true})
	v1Seed, err := os.ReadFile(v1)
	require.NoError(f, err)
	f.Add(v1Seed)
	// Nested columns, as Arrow lays them out (TestGeoParquetArrowLayout).
	f.Add(arrowLayoutFile(f))
	// No "geo" metadata, Parquet's GEOMETRY type
	// (TestGeoParquetNativeGeometry).
	var native bytes.Buffer
	nw := parquet.NewGenericWriter[nativeDefaultRow](&native)
	_, err = nw.Write([]nativeDefaultRow{{Geom: wkbOf(f, square), Name: "b"}})
	require.NoError(f, err)
	require.NoError(f, nw.Close())
	f.Add(native.Bytes())
	f.Add(withPageHeader(f, v1Seed, func(h *format.PageHeader) {
		if h.DataPageHeader.Valid {
			h.DataPageHeader.V.NumValues = 1<<31 - 1
		}
	}))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.parquet")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		r, err := geomio.Open(path, geomio.Options{SourceSRID: 4326})
		if err != nil {
			require.True(t, geomio.IsInputError(err), "%v", err)
			return
		}
		defer r.Close()
		for n := 0; r.Next() && n < 1000; n++ {
		}
		if err := r.Err(); err != nil {
			require.True(t, geomio.IsInputError(err), "%v", err)
		}
	})
}

// FuzzParseWKB: any bytes decode to a geometry or an error, never a
// panic, and what decodes is XY.
func FuzzParseWKB(f *testing.F) {
	for _, g := range []geom.T{
		square,
		geom.NewPointFlat(geom.XYZM, []float64{1, 2, 3, 4}),
		geom.NewLineStringFlat(geom.XYM, []float64{1, 2, 3, 4, 5, 6}),
		geom.NewMultiPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 1, 1, 0, 0}, [][]int{{8}}),
		geom.NewMultiLineStringFlat(geom.XY, []float64{0, 0, 1, 1, 2, 2, 3, 3}, []int{4, 8}),
		geom.NewMultiPointFlat(geom.XY, []float64{0, 0, 1, 1}),
		geom.NewGeometryCollection().MustPush(square, geom.NewPointFlat(geom.XY, []float64{1, 2})),
	} {
		f.Add(wkbOf(f, g))
	}
	f.Add([]byte{0, 0, 0, 0, 7, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := geomio.ParseWKB(b)
		if err == nil && g != nil {
			require.Equal(t, geom.XY, g.Layout())
		}
	})
}

// TestParseWKB: ISO and extended WKB dimensions, both byte orders,
// promotion, empties, and refusals.
func TestParseWKB(t *testing.T) {
	t.Parallel()
	var xdr bytes.Buffer
	require.NoError(t, wkb.Write(&xdr, wkb.XDR, square))
	g, err := geomio.ParseWKB(xdr.Bytes())
	require.NoError(t, err)
	require.Equal(t, []float64{0, 0, 1, 0, 1, 1, 0, 1, 0, 0}, g.FlatCoords())
	// EWKB: Polygon with the Z flag and an SRID.
	ewkb := []byte{1, 3, 0, 0, 0xA0, 0xE6, 0x10, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0}
	for _, xyz := range [][3]float64{{0, 0, 9}, {1, 0, 9}, {1, 1, 9}, {0, 0, 9}} {
		for _, v := range xyz {
			ewkb = append(ewkb, wkbOf(t, geom.NewPointFlat(geom.XY, []float64{v, 0}))[5:13]...)
		}
	}
	g, err = geomio.ParseWKB(ewkb)
	require.NoError(t, err)
	require.IsType(t, &geom.MultiPolygon{}, g)
	require.Equal(t, []float64{0, 0, 1, 0, 1, 1, 0, 0}, g.FlatCoords())
	g, err = geomio.ParseWKB(wkbOf(t, geom.NewPolygon(geom.XY)))
	require.NoError(t, err)
	require.Nil(t, g, "an empty polygon is no geometry")
	for _, bad := range [][]byte{
		nil,
		{2},
		{1, 99, 0, 0, 0},
		{1, 2, 0, 0, 0, 255, 255, 255, 255}, // a count larger than the bytes
		append(wkbOf(t, geom.NewPointFlat(geom.XY, []float64{1, 2})), 0),                    // trailing byte
		wkbOf(t, geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 1, 1, 0, 1}, []int{8})), // not closed
	} {
		_, err := geomio.ParseWKB(bad)
		require.Error(t, err, "%x", bad)
	}
}

// TestGeoParquetWriteLarge writes GEOINGEST_GEOPARQUET_LARGE_ROWS rows (the
// 10,000 synthetic parcels repeated, shifted east by 0.7° each round) to
// the GeoParquet file GEOINGEST_GEOPARQUET_LARGE names, for measuring the
// reader's memory on a large file (docs/benchmarks.md). Skipped unless
// set.
func TestGeoParquetWriteLarge(t *testing.T) {
	path := os.Getenv("GEOINGEST_GEOPARQUET_LARGE")
	if path == "" {
		t.Skip("GEOINGEST_GEOPARQUET_LARGE not set")
	}
	rowsWanted := 1000000
	if n, err := strconv.Atoi(os.Getenv("GEOINGEST_GEOPARQUET_LARGE_ROWS")); err == nil && n > 0 {
		rowsWanted = n
	}
	_, src, err := readAll(t, "../../testdata/synthetic/parcels_10k.geojson", geomio.Options{})
	require.NoError(t, err)
	n := testfiles.GeoParquetFrom(t, path, func(yield func(geom.T, []byte) bool) {
		for i := 0; i < rowsWanted; i++ {
			f := src[i%len(src)]
			mp := f.Geom.(*geom.MultiPolygon)
			flat := append([]float64(nil), mp.FlatCoords()...)
			for j := 0; j < len(flat); j += 2 {
				flat[j] += 0.7 * float64(i/len(src)%200)
			}
			if !yield(geom.NewMultiPolygonFlat(geom.XY, flat, mp.Endss()), f.Properties) {
				return
			}
		}
	}, testfiles.GeoParquetOptions{RowGroupRows: 100000})
	require.Equal(t, rowsWanted, n)
}

// TestGeoParquetLimits: a geometry over the feature-bytes limit is refused
// before it is decoded, and a column chunk that declares more than the
// compression-ratio limit (a decompression bomb; here the limit is 1, which
// the 1 MiB name column exceeds) before it is read; both
// as limit errors naming the limit.
func TestGeoParquetLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := testfiles.GeoParquet(t, filepath.Join(dir, "big.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square)},
		testfiles.GeoParquetRow{Geometry: wkbOf(t, geom.NewLineStringFlat(geom.XY, make([]float64, 2*5000))), Properties: `{}`},
	), testfiles.GeoParquetOptions{})
	_, fs, err := readAll(t, big, geomio.Options{Limits: geomio.Limits{MaxRecordBytes: 50000}})
	require.Error(t, err)
	require.True(t, geomio.IsLimitError(err), "%v", err)
	require.Contains(t, err.Error(), "max-feature-bytes")
	require.Contains(t, err.Error(), "feature 1")
	require.Len(t, fs, 1)

	zeros := strings.Repeat("0", 1<<20)
	bomb := testfiles.GeoParquet(t, filepath.Join(dir, "bomb.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square), Name: &zeros, Properties: `{}`},
	), testfiles.GeoParquetOptions{})
	_, _, err = readAll(t, bomb, geomio.Options{Limits: geomio.Limits{MaxCompressionRatio: 1}})
	require.Error(t, err)
	require.True(t, geomio.IsLimitError(err), "%v", err)
	require.Contains(t, err.Error(), `column "name"`)
	require.Contains(t, err.Error(), "max-zip-ratio")
	_, _, err = readAll(t, bomb, geomio.Options{Limits: geomio.Limits{MaxPropertyBytes: 2 << 20}})
	require.NoError(t, err, "within the default ratio")
}

type nestedRow struct {
	Geometry []byte   `parquet:"geometry,optional"`
	Tags     []string `parquet:"tags,list"`
	Attrs    struct {
		A int64  `parquet:"a"`
		B string `parquet:"b"`
	} `parquet:"attrs"`
	Code string `parquet:"code"`
}

// TestGeoParquetNestedColumns: lists and structs become JSON arrays and
// objects, beside the flat columns.
func TestGeoParquetNestedColumns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested.parquet")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[nestedRow](f, parquet.KeyValueMetadata("geo",
		`{"version":"1.0.0","primary_column":"geometry","columns":{"geometry":{"encoding":"WKB","geometry_types":["Polygon"]}}}`))
	r := nestedRow{Geometry: wkbOf(t, square), Tags: []string{"x", "y"}, Code: "c1"}
	r.Attrs.A, r.Attrs.B = 7, "b"
	r2 := nestedRow{Geometry: wkbOf(t, square), Code: "c2"}
	_, err = w.Write([]nestedRow{r, r2})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	_, fs, err := readAll(t, path, geomio.Options{})
	require.NoError(t, err)
	require.Len(t, fs, 2)
	require.JSONEq(t, `{"tags":["x","y"],"attrs":{"a":7,"b":"b"},"code":"c1"}`, string(fs[0].Properties))
	var p map[string]any
	require.NoError(t, json.Unmarshal(fs[1].Properties, &p))
	require.Equal(t, "c2", p["code"])
	require.Empty(t, p["tags"])
}

// arrowRow is a row as Arrow (pyarrow, GeoPandas, GDAL) lays out a
// GeoParquet file: the geometry after the other columns, lists of three
// levels with optional elements, a struct holding a list, a map, and the
// covering bbox struct.
type arrowRow struct {
	Name     string           `parquet:"name"`
	Tags     []*string        `parquet:"tags,optional,list"`
	Attrs    *arrowAttrs      `parquet:"attrs,optional"`
	Counts   map[string]int64 `parquet:"counts"`
	Geometry []byte           `parquet:"geometry,optional"`
	BBox     struct {
		XMin float64 `parquet:"xmin"`
		YMin float64 `parquet:"ymin"`
		XMax float64 `parquet:"xmax"`
		YMax float64 `parquet:"ymax"`
	} `parquet:"bbox"`
}

type arrowAttrs struct {
	A    int64   `parquet:"a"`
	Vals []int32 `parquet:"vals,list"`
}

// TestGeoParquetArrowLayout: a file laid out as Arrow's Go writer
// (pqarrow, under gpq and other Go GeoParquet tools) writes one: the
// schema's root marked REPEATED, the geometry column after the others,
// lists with null elements, null and empty, a struct with a list in it, a
// map. It is read: the geometry column is found (parquet-go's schema
// lookup counted the root's repetition, and the file was refused as having
// no top-level geometry column), and every nested property comes out as
// JSON (parquet-go's reconstruction panicked on such a root). The covering
// bbox column is left out.
func TestGeoParquetArrowLayout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arrow.parquet")
	require.NoError(t, os.WriteFile(path, arrowLayoutFile(t), 0o644))
	_, fs, err := readAll(t, path, geomio.Options{})
	require.NoError(t, err)
	require.Len(t, fs, 3)
	for i, want := range []string{
		`{"name":"a","tags":["x",null,"é"],"attrs":{"a":7,"vals":[1,2]},"counts":{"k":3}}`,
		`{"name":"b","tags":[],"attrs":{"a":8,"vals":[]},"counts":{}}`,
		`{"name":"c","tags":null,"attrs":null,"counts":{}}`,
	} {
		require.JSONEq(t, want, string(fs[i].Properties), "row %d", i)
		require.NotNil(t, fs[i].Geom, "row %d", i)
	}
}

// arrowLayoutFile is a GeoParquet file of three arrowRows (nested values,
// nulls and empty lists), two rows a row group, with its root REPEATED.
func arrowLayoutFile(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[arrowRow](&buf, parquet.KeyValueMetadata("geo",
		`{"version":"1.1.0","primary_column":"geometry","columns":{"geometry":{"encoding":"WKB","geometry_types":["Polygon"],`+
			`"covering":{"bbox":{"xmin":["bbox","xmin"],"ymin":["bbox","ymin"],"xmax":["bbox","xmax"],"ymax":["bbox","ymax"]}}}}}`),
		parquet.MaxRowsPerRowGroup(2))
	x, y := "x", "é"
	_, err := w.Write([]arrowRow{
		{Name: "a", Tags: []*string{&x, nil, &y}, Attrs: &arrowAttrs{A: 7, Vals: []int32{1, 2}}, Counts: map[string]int64{"k": 3}, Geometry: wkbOf(t, square)},
		{Name: "b", Tags: []*string{}, Attrs: &arrowAttrs{A: 8}, Geometry: wkbOf(t, square)},
		{Name: "c", Geometry: wkbOf(t, square)},
	})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return withRootRepeated(t, buf.Bytes())
}

// withRootRepeated returns the Parquet file good with its schema's root
// element marked REPEATED, as Arrow's Go writer marks it.
func withRootRepeated(t testing.TB, good []byte) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	n := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	footerAt := len(good) - 8 - n
	var md format.FileMetaData
	require.NoError(t, thrift.Unmarshal(&proto, good[footerAt:len(good)-8], &md))
	md.Schema[0].RepetitionType = thrift.New(format.Repeated)
	footer, err := thrift.Marshal(&proto, &md)
	require.NoError(t, err)
	out := append(append([]byte(nil), good[:footerAt]...), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

type twoGeomRow struct {
	Geometry []byte `parquet:"geometry,optional"`
	Centroid []byte `parquet:"centroid,optional"`
	Name     string `parquet:"name"`
}

// TestGeoParquetGeometryField: --geometry-field chooses among the geo
// metadata's geometry columns (case-insensitively), the primary one by
// default, and says which was read when there are several; a name the
// file lacks is refused naming the file, the layer and its geometry
// columns, in a file with one geometry column too (it was ignored).
func TestGeoParquetGeometryField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	two := filepath.Join(dir, "two.parquet")
	f, err := os.Create(two)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[twoGeomRow](f, parquet.KeyValueMetadata("geo",
		`{"version":"1.1.0","primary_column":"geometry","columns":{"geometry":{"encoding":"WKB","geometry_types":["Polygon"]},"centroid":{"encoding":"WKB","geometry_types":["Point"]}}}`))
	_, err = w.Write([]twoGeomRow{{Geometry: wkbOf(t, square), Centroid: wkbOf(t, geom.NewPointFlat(geom.XY, []float64{0.5, 0.5})), Name: "a"}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())

	r, err := geomio.Open(two, geomio.Options{})
	require.NoError(t, err)
	require.True(t, r.Next())
	require.IsType(t, &geom.MultiPolygon{}, r.Feature().Geom)
	require.Equal(t, "geometry", r.Layer().GeometryField)
	require.JSONEq(t, `{"name":"a"}`, string(r.Feature().Properties))
	r.Close()

	r, err = geomio.Open(two, geomio.Options{GeometryField: "Centroid"})
	require.NoError(t, err)
	require.True(t, r.Next())
	require.IsType(t, &geom.Point{}, r.Feature().Geom)
	require.Equal(t, "centroid", r.Layer().GeometryField)
	r.Close()

	_, err = geomio.Open(two, geomio.Options{GeometryField: "nope"})
	require.Error(t, err)
	require.True(t, geomio.IsInputError(err), "%v", err)
	require.Contains(t, err.Error(), two)
	require.Contains(t, err.Error(), `layer "two": no geometry column "nope" (the file's geometry columns are "centroid", "geometry")`)

	one := testfiles.GeoParquet(t, filepath.Join(dir, "one.parquet"), rows(testfiles.GeoParquetRow{Geometry: wkbOf(t, square)}), testfiles.GeoParquetOptions{})
	_, err = geomio.Open(one, geomio.Options{GeometryField: "nope"})
	require.Error(t, err)
	require.Contains(t, err.Error(), `no geometry column "nope" (the file's geometry columns are "geometry")`)
	r, err = geomio.Open(one, geomio.Options{GeometryField: "GEOMETRY"})
	require.NoError(t, err)
	require.Empty(t, r.Layer().GeometryField)
	r.Close()
}

type nativeRow struct {
	Geom []byte `parquet:"geom,optional,geometry(projjson:crs_27700)"`
	Name string `parquet:"name"`
}

type nativeDefaultRow struct {
	Geom []byte `parquet:"geom,optional,geometry()"`
	Name string `parquet:"name"`
}

// TestGeoParquetNativeGeometry: a Parquet file with no "geo" metadata
// whose geometry column has Parquet's own GEOMETRY logical type (recent
// Arrow and DuckDB write it) is read through that column: its CRS a
// PROJJSON the file's metadata holds ("projjson:KEY"), or OGC:CRS84 by
// default. It was refused as not GeoParquet.
func TestGeoParquetNativeGeometry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	projjson, err := os.ReadFile(filepath.Join("testdata", "epsg27700.projjson"))
	require.NoError(t, err)
	bng := geom.NewPolygonFlat(geom.XY, []float64{358000, 173000, 358100, 173000, 358100, 173100, 358000, 173000}, []int{8})
	p := filepath.Join(dir, "native.parquet")
	f, err := os.Create(p)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[nativeRow](f, parquet.KeyValueMetadata("crs_27700", string(projjson)))
	_, err = w.Write([]nativeRow{{Geom: wkbOf(t, bng), Name: "a"}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	l, fs, err := readAll(t, p, geomio.Options{})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, 27700, l.SRID)
	require.JSONEq(t, `{"name":"a"}`, string(fs[0].Properties))

	p = filepath.Join(dir, "default.parquet")
	f, err = os.Create(p)
	require.NoError(t, err)
	w2 := parquet.NewGenericWriter[nativeDefaultRow](f)
	_, err = w2.Write([]nativeDefaultRow{{Geom: wkbOf(t, square), Name: "b"}})
	require.NoError(t, err)
	require.NoError(t, w2.Close())
	require.NoError(t, f.Close())
	l, fs, err = readAll(t, p, geomio.Options{})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, 4326, l.SRID)
}
