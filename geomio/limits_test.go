package geomio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

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

var okFeature = featureJSONText(`{"id":1}`, polygonOf(5))

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
