//go:build !cgo || geoingest_nogdal

package geomio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSlimBuildRefusesGDALFormats: a build without GDAL refuses what only
// GDAL reads, saying so, and still reads shapefiles and GeoJSON.
func TestSlimBuildRefusesGDALFormats(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x.gpkg", "x.fgb", "x.gml", "x.tab", "x.mif", "x.csv"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("not read\n"), 0o644))
		_, err := Open(p, Options{})
		require.Error(t, err)
		require.True(t, IsInputError(err))
		require.Contains(t, err.Error(), p)
		require.Contains(t, err.Error(), "slim build of geoingest lacks")
	}
	r, err := Open(filepath.Join(corpusDir, "six_counties", "six_counties.shp"), Options{})
	require.NoError(t, err)
	defer r.Close()
	require.True(t, r.Next())

	// KML is read in Go, so the slim build reads it too.
	p := filepath.Join(dir, "x.kml")
	require.NoError(t, os.WriteFile(p, []byte(kmlDocs["nested.kml"]), 0o644))
	k, err := Open(p, Options{})
	require.NoError(t, err)
	defer k.Close()
	n := 0
	for k.Next() {
		n++
	}
	require.NoError(t, k.Err())
	require.Equal(t, 6, n)
}
