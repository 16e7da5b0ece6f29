package geomio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/geojson"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/zip"
	"github.com/stretchr/testify/require"
)

// ring returns a closed GeoJSON ring of n vertices (n >= 4).
func ring(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n-1; i++ {
		a := 2 * math.Pi * float64(i) / float64(n-1)
		fmt.Fprintf(&b, "[%.6f,%.6f],", math.Cos(a), math.Sin(a))
	}
	b.WriteString("[1.000000,0.000000]]")
	return b.String()
}

func polygonOf(n int) string {
	return `{"type":"Polygon","coordinates":[` + ring(n) + `]}`
}

func featureJSONText(props, geometry string) string {
	return `{"type":"Feature","properties":` + props + `,"geometry":` + geometry + `}`
}

// limitCase is one feature over one limit, after a feature under all of
// them: the error must name the feature (index 1) and the limit.
type limitCase struct {
	name   string
	lim    Limits
	second string // the second feature
	want   string // what the error says after `layer "L", feature 1: `
}

var okFeature = featureJSONText(`{"id":1}`, polygonOf(5))

var geojsonLimitCases = []limitCase{
	{"vertices", Limits{MaxVertices: 5}, featureJSONText(`{"id":2}`, polygonOf(6)), "more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)"},
	{"vertices, reference path", Limits{MaxVertices: 5}, featureJSONText(`{"id":2}`, `{"type":"GeometryCollection","geometries":[`+polygonOf(4)+`,`+polygonOf(4)+`]}`), "more than 5 vertices"},
	{"vertices, duplicate member", Limits{MaxVertices: 5}, `{"type":"Feature","properties":{},"properties":{},"geometry":` + polygonOf(6) + `}`, "more than 5 vertices"},
	{"property bytes", Limits{MaxPropertyBytes: 10}, featureJSONText(`{"id":2,"name":"abcdefghijklmnop"}`, polygonOf(5)), "a property value of more than 10 bytes, over the limit (raise it with --max-property-bytes or GEOINGEST_MAX_PROPERTY_BYTES)"},
	{"property bytes, nested", Limits{MaxPropertyBytes: 10}, featureJSONText(`{"id":2, "o": {"a": [1, 2, 3, 4, 5]}}`, polygonOf(5)), "a property value of more than 10 bytes"},
	{"properties", Limits{MaxProperties: 2}, featureJSONText(`{"a":1,"b":2,"c":3}`, polygonOf(5)), "more than 2 properties, over the limit (raise it with --max-properties or GEOINGEST_MAX_PROPERTIES)"},
	{"features", Limits{MaxFeatures: 1}, featureJSONText(`{"id":2}`, polygonOf(5)), "more than 1 features in the upload, over the limit (raise it with --max-features or GEOINGEST_MAX_FEATURES)"},
}

func TestLimitsGeoJSON(t *testing.T) {
	t.Parallel()
	cases := append(geojsonLimitCases, limitCase{"feature bytes", Limits{MaxRecordBytes: 1000},
		featureJSONText(`{"s":"`+strings.Repeat("x", 2*geojson.DecoderSlack)+`"}`, polygonOf(5)),
		"more than 1000 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "parcels.geojson", `{"type":"FeatureCollection","features":[`+okFeature+`,`+tc.second+`]}`)
			for name, tu := range testTunings {
				r, err := geojson.OpenTuned(path, path, "parcels", 0, Options{Limits: tc.lim.WithDefaults()}, tu)
				require.NoError(t, err)
				fs, err := readAll(t, core.WithLimits(r, path, tc.lim.WithDefaults()))
				r.Close()
				require.Len(t, fs, 1, name)
				require.True(t, IsInputError(err), "%s: %v", name, err)
				require.True(t, IsLimitError(err), "%s: %v", name, err)
				require.Equal(t, path+`: layer "parcels", feature 1: `, err.Error()[:len(err.Error())-len(err.(*Error).Err.Error())], name)
				require.Contains(t, err.Error(), tc.want, name)
			}
			// Under the limits, the same file loads.
			_, fs, err := openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

func TestLimitsGeoJSONSingleFeature(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "one.geojson", featureJSONText(`{}`, polygonOf(6)))
	_, _, err := openAll(t, path, Options{Limits: Limits{MaxVertices: 5}})
	require.EqualError(t, err, path+`: layer "one", feature 0: more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`)
	path = writeTemp(t, "one.geojson", featureJSONText(`{"s":"`+strings.Repeat("x", 2*geojson.DecoderSlack)+`"}`, polygonOf(5)))
	_, _, err = openAll(t, path, Options{Limits: Limits{MaxRecordBytes: 100}})
	require.ErrorContains(t, err, `layer "one", feature 0: more than 100 bytes in one feature`)
}

func TestLimitsGeoJSONSeq(t *testing.T) {
	t.Parallel()
	cases := append(geojsonLimitCases, limitCase{"feature bytes", Limits{MaxRecordBytes: 1000},
		featureJSONText(`{"s":"`+strings.Repeat("x", 1000)+`"}`, polygonOf(5)),
		"more than 1000 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)"},
		limitCase{"vertices, bare geometry", Limits{MaxVertices: 5}, polygonOf(6), "more than 5 vertices"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "parcels.geojsonl", okFeature+"\n"+tc.second+"\n")
			_, fs, err := openAll(t, path, Options{Limits: tc.lim})
			require.Len(t, fs, 1)
			require.True(t, IsLimitError(err), "%v", err)
			require.Contains(t, err.Error(), path+`: layer "parcels", feature 1: `+tc.want)
			_, fs, err = openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

// polygonSHP is a .shp of polygons, one record per entry of sizes: a ring
// of that many points (the first closing the ring).
func polygonSHP(sizes ...int) []byte {
	var b bytes.Buffer
	h := make([]byte, 100)
	binary.BigEndian.PutUint32(h[0:], 9994)
	binary.LittleEndian.PutUint32(h[28:], 1000)
	binary.LittleEndian.PutUint32(h[32:], 5)
	b.Write(h)
	for i, n := range sizes {
		content := 44 + 4 + 16*n
		rec := make([]byte, 8+content)
		binary.BigEndian.PutUint32(rec[0:], uint32(i+1))
		binary.BigEndian.PutUint32(rec[4:], uint32(content/2))
		c := rec[8:]
		binary.LittleEndian.PutUint32(c[0:], 5)
		binary.LittleEndian.PutUint32(c[36:], 1)
		binary.LittleEndian.PutUint32(c[40:], uint32(n))
		for j := 0; j < n; j++ {
			a := -2 * math.Pi * float64(j%(n-1)) / float64(n-1) // clockwise: an outer ring
			binary.LittleEndian.PutUint64(c[48+16*j:], math.Float64bits(math.Cos(a)))
			binary.LittleEndian.PutUint64(c[56+16*j:], math.Float64bits(math.Sin(a)))
		}
		b.Write(rec)
	}
	out := b.Bytes()
	binary.BigEndian.PutUint32(out[24:], uint32(len(out)/2))
	return out
}

func TestLimitsShapefile(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"ID", 'N', 4, 0}, {"NAME", 'C', 20, 0}, {"CODE", 'C', 4, 0}}
	dbf := makeDBF(0, cols, [][]string{{"1", "short", "a"}, {"2", "a rather long name", "b"}})
	for _, tc := range []struct {
		name string
		lim  Limits
		shp  []byte
		want string
	}{
		{"vertices", Limits{MaxVertices: 5}, polygonSHP(5, 6), "more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)"},
		{"feature bytes", Limits{MaxRecordBytes: 44 + 4 + 16*5}, polygonSHP(5, 6), "more than 128 bytes in one feature, over the limit (raise it with --max-feature-bytes"},
		{"property bytes", Limits{MaxPropertyBytes: 10}, polygonSHP(5, 5), "a property value of more than 10 bytes, over the limit"},
		{"properties", Limits{MaxProperties: 2}, polygonSHP(5, 5), "more than 2 properties"},
		{"features", Limits{MaxFeatures: 1}, polygonSHP(5, 5), "more than 1 features in the upload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim
			if tc.name == "properties" {
				// The first record is under it only with fewer fields:
				// every record has all three, so feature 0 is refused.
				lim.MaxProperties = 2
			}
			path := writeSet(t, t.TempDir(), "parcels", tc.shp, dbf, nil)
			_, fs, err := openAll(t, path, Options{Limits: lim})
			require.True(t, IsLimitError(err), "%v", err)
			idx := 1
			if tc.name == "properties" {
				idx = 0
			}
			require.Len(t, fs, idx)
			require.Contains(t, err.Error(), fmt.Sprintf(`%s: layer "parcels", feature %d: %s`, path, idx, tc.want))
			_, fs, err = openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

// TestLimitsShapefileDeclared: a record's declared sizes are checked
// against the file and the limits before the record is read.
func TestLimitsShapefileDeclared(t *testing.T) {
	t.Parallel()
	dbf := makeDBF(0, []dbfCol{{"ID", 'N', 4, 0}}, [][]string{{"1"}})
	shp := polygonSHP(5)
	lying := bytes.Clone(shp)
	binary.BigEndian.PutUint32(lying[104:], math.MaxUint32-100) // content length: about 8 GiB
	binary.BigEndian.PutUint32(lying[24:], math.MaxUint32)      // file length: 8 GiB
	path := writeSet(t, t.TempDir(), "lying", lying, dbf, nil)
	_, _, err := openAll(t, path, Options{})
	require.ErrorContains(t, err, "record 0 at byte 100: truncated: content length 8589934390, but the file has 128 bytes left")
	// A point count over the limit that the record could hold is the
	// limit's, reported before the record's points are read.
	many := polygonSHP(1000)
	path = writeSet(t, t.TempDir(), "many", many, dbf, nil)
	_, _, err = openAll(t, path, Options{Limits: Limits{MaxVertices: 999}})
	require.ErrorContains(t, err, `layer "many", feature 0: more than 999 vertices`)
}

func TestLimitsZip(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"ID", 'N', 4, 0}}
	dbf := string(makeDBF(0, cols, [][]string{{"1"}, {"2"}}))
	shp := string(polygonSHP(5, 6))
	zp := makeZip(t, [][2]string{{"a/one.shp", shp}, {"a/one.dbf", dbf}, {"b/two.shp", shp}, {"b/two.dbf", dbf}})
	_, _, err := openAll(t, zp, Options{Limits: Limits{MaxLayers: 1}})
	require.EqualError(t, err, zp+": upload: more than 1 layers, over the limit (raise it with --max-layers or GEOINGEST_MAX_LAYERS)")
	_, fs, err := openAll(t, zp, Options{Limits: Limits{MaxVertices: 5}})
	require.Len(t, fs, 1)
	require.EqualError(t, err, zp+`/a/one.shp: layer "a/one", feature 1: more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`)
	// Index counts across layers: the upload's third feature is over.
	_, fs, err = openAll(t, zp, Options{Limits: Limits{MaxFeatures: 3}})
	require.Len(t, fs, 3)
	require.EqualError(t, err, zp+`: layer "b/two", feature 3: more than 3 features in the upload, over the limit (raise it with --max-features or GEOINGEST_MAX_FEATURES)`)
	gz := makeZip(t, [][2]string{{"p/parcels.geojson", `{"type":"FeatureCollection","features":[` + okFeature + `,` + featureJSONText(`{"a":1,"b":2,"c":3}`, polygonOf(5)) + `]}`}})
	_, _, err = openAll(t, gz, Options{Limits: Limits{MaxProperties: 2}})
	require.ErrorContains(t, err, `layer "p/parcels", feature 1: more than 2 properties`)
	_, fs, err = openAll(t, zp, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 4)
}

// TestLimitsZipEntries: the entry count is refused from the end of the
// zip, before archive/zip reads its directory.
func TestLimitsZipEntries(t *testing.T) {
	t.Parallel()
	var entries [][2]string
	for i := 0; i < 11; i++ {
		entries = append(entries, [2]string{fmt.Sprintf("f%02d.txt", i), ""})
	}
	zp := makeZip(t, entries)
	err := zip.CheckZipDirectory(zp, Limits{MaxEntries: 10})
	require.EqualError(t, err, zp+": zip has 11 entries: more than 10 entries, over the limit (raise it with --max-zip-entries or GEOINGEST_MAX_ZIP_ENTRIES)")
	require.NoError(t, zip.CheckZipDirectory(zp, Limits{MaxEntries: 11}))
	err = zip.CheckZipDirectory(zp, Limits{MaxEntries: 0})
	require.Error(t, err, "no entries allowed")
}

// TestFastDecoderStopsAtLimits: the fast decoder stops parsing at the
// vertex after the limit (its buffer holds no more).
func TestFastDecoderStopsAtLimits(t *testing.T) {
	t.Parallel()
	d := geojson.FastDecoder{Lim: Limits{MaxVertices: 5}.WithDefaults()}
	_, _, ok := d.Feature([]byte(featureJSONText(`{}`, polygonOf(1000))), false)
	require.False(t, ok)
	require.NotNil(t, d.Over)
	require.Equal(t, LimitVertices, d.Over.Limit)
	require.LessOrEqual(t, len(d.Flat), 12, "parsed past the limit")
	_, _, ok = d.Feature([]byte(featureJSONText(`{"a":1}`, polygonOf(5))), false)
	require.True(t, ok)
	require.Nil(t, d.Over)
}

// TestSplitterBufferBounded: a buffer holding one unfinished feature
// grows no larger than the feature limit allows, nor than what is left of
// the file.
func TestSplitterBufferBounded(t *testing.T) {
	t.Parallel()
	in := geojson.Input{Buf: make([]byte, 1000, 1000), Size: 1000, Limit: 3000}
	in.Grow(0)
	require.Equal(t, 3000, cap(in.Buf), "the buffer after this one would pass the limit")
	in = geojson.Input{Buf: make([]byte, 1000, 1000), Size: 1000, FileSize: 1500}
	in.Grow(0)
	require.Equal(t, 1501, cap(in.Buf))
	in = geojson.Input{Buf: make([]byte, 1000, 1000), Size: 1000}
	in.Grow(0)
	require.Equal(t, 4000, cap(in.Buf))
}

// TestLimitsGeoJSONTail: a member after the features array is bounded by
// the feature limit too, under every tuning as the reference reader.
func TestLimitsGeoJSONTail(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "tail.geojson", `{"type":"FeatureCollection","features":[`+okFeature+`],"meta":"`+strings.Repeat("x", 3*geojson.DecoderSlack)+`"}`)
	want := checkAllTunings(t, path, false, Options{Limits: Limits{MaxRecordBytes: 100}})
	require.EqualError(t, want.err, path+": upload: a member of more than 100 bytes after the features array, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)")
}
