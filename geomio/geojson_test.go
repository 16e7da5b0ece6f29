package geomio

import (
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

// TestZipGeoJSON: a zip holding GeoJSON (counties.zip with
// counties.geojson, in a folder) is read like a zipped shapefile: its
// layer is the path in the zip, its crs member is honoured, errors name
// archive/entry, and a zip with several layers keeps Index counting.
func TestZipGeoJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	counties := `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::27700"}},"features":[` +
		`{"type":"Feature","properties":{"name":"A"},"geometry":{"type":"Polygon","coordinates":[[[358000,172000],[359000,172000],[359000,173000],[358000,172000]]]}},` +
		`{"type":"Feature","properties":{"name":"B"},"geometry":null}]}`
	p := testfiles.Zip(t, filepath.Join(dir, "counties.zip"), "export/counties.geojson", []byte(counties), "__MACOSX/export/._counties.geojson", []byte("junk"))
	layer, fs, err := openAll(t, p, Options{})
	require.NoError(t, err)
	require.Equal(t, FormatGeoJSON, layer.Format)
	require.Equal(t, "export/counties", layer.Name)
	require.Equal(t, 27700, layer.SRID)
	require.Len(t, fs, 2)
	require.Equal(t, "export/counties", fs[0].Layer)
	require.Equal(t, 27700, fs[0].Geom.SRID())

	// Two GeoJSON layers: lexical order, Index across layers.
	p = testfiles.Zip(t, filepath.Join(dir, "two.zip"), "b.geojson", []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":`+sq+`}]}`),
		"a.json", []byte(counties))
	_, fs, err = openAll(t, p, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 3)
	require.Equal(t, []string{"a", "a", "b"}, []string{fs[0].Layer, fs[1].Layer, fs[2].Layer})
	require.Equal(t, int64(2), fs[2].Index)
	require.Equal(t, 4326, fs[2].Geom.SRID())

	// A broken entry is named archive/entry.
	p = testfiles.Zip(t, filepath.Join(dir, "bad.zip"), "bad.geojson", []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":"x"}}]}`))
	_, _, err = openAll(t, p, Options{})
	require.Error(t, err)
	require.True(t, IsInputError(err))
	require.Contains(t, err.Error(), "bad.zip/bad.geojson")
}
