package geomio

import (
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
