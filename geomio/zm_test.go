package geomio_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// wkbOf is g as little-endian WKB.
func wkbOf(t testing.TB, g geom.T) []byte {
	var buf bytes.Buffer
	require.NoError(t, wkb.Write(&buf, wkb.NDR, g))
	return buf.Bytes()
}

// zmGeoJSON has six features: a polygon with altitudes (decoded by the
// fast decoder), one without, a GeometryCollection with an altitude
// (decoded by the reference path), one without but with a 3D bbox, a
// polygon with a 3D bbox, and a null geometry.
const zmGeoJSON = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0,5],[1,0,5],[1,1,5],[0,0,5]]]}},
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
{"type":"Feature","properties":{},"geometry":{"type":"GeometryCollection","geometries":[{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0,7]]]}]}},
{"type":"Feature","properties":{},"geometry":{"type":"GeometryCollection","bbox":[0,0,0,1,1,1],"geometries":[{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}]}},
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","bbox":[0,0,0,1,1,1],"coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
{"type":"Feature","properties":{},"geometry":null}
]}`

// readZM reads path and returns each feature's DroppedZM flag and the
// layer's count after the last feature.
func readZM(t *testing.T, path string) ([]bool, int64) {
	t.Helper()
	r, err := geomio.Open(path, geomio.Options{})
	require.NoError(t, err)
	defer r.Close()
	var flags []bool
	for r.Next() {
		flags = append(flags, r.Feature().DroppedZM)
	}
	require.NoError(t, r.Err())
	return flags, r.Layer().DroppedZM
}

// TestDroppedZMCounted: every reader flags the features whose geometry had
// Z or M (Feature.DroppedZM), and the layer counts them (Layer.DroppedZM):
// GeoJSON and GeoJSON sequences by both decoders, GeoParquet by its WKB
// type, shapefiles by the record's shape type (the formats read with GDAL:
// TestOGRCurvesAndZM).
func TestDroppedZMCounted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gj := filepath.Join(dir, "zm.geojson")
	require.NoError(t, os.WriteFile(gj, []byte(zmGeoJSON), 0o644))
	flags, n := readZM(t, gj)
	require.Equal(t, []bool{true, false, true, false, false, false}, flags)
	require.EqualValues(t, 2, n)

	seq := filepath.Join(dir, "zm.geojsonl")
	require.NoError(t, os.WriteFile(seq, []byte(`{"type":"Polygon","coordinates":[[[0,0,1],[1,0,1],[1,1,1],[0,0,1]]]}
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}
{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2,3]}]}
`), 0o644))
	flags, n = readZM(t, seq)
	require.Equal(t, []bool{true, false, true}, flags)
	require.EqualValues(t, 2, n)

	square := geom.NewPolygonFlat(geom.XYZ, []float64{0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1}, []int{15})
	flat := geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 1, 1, 0, 0}, []int{8})
	pq := testfiles.GeoParquet(t, filepath.Join(dir, "zm.parquet"), slices.Values([]testfiles.GeoParquetRow{
		{Geometry: wkbOf(t, square)}, // XYZ
		{Geometry: wkbOf(t, flat)},
		{},
	}), testfiles.GeoParquetOptions{})
	flags, n = readZM(t, pq)
	require.Equal(t, []bool{true, false, false}, flags)
	require.EqualValues(t, 1, n)

	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogr2ogr not found: scripts/setup.sh --test installs gdal-bin")
		}
		t.Skip("ogr2ogr not found")
	}
	for _, dim := range []string{"XYZ", "XYM", "XY"} {
		shp := filepath.Join(dir, "zm_"+dim+".shp")
		out, err := exec.Command("ogr2ogr", "-f", "ESRI Shapefile", shp, gj, "-dim", dim, "-where", "OGR_GEOMETRY = 'POLYGON'").CombinedOutput()
		require.NoError(t, err, "%s", out)
		flags, n = readZM(t, shp)
		require.Len(t, flags, 3, dim)
		want := int64(3) // a PolygonZ or PolygonM file: every record has Z or M
		if dim == "XY" {
			want = 0
		}
		require.Equal(t, want, n, dim)
	}
}
