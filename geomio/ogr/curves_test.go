//go:build cgo && !geoingest_nogdal

package ogr_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// curveFixtures are curved polygons of each kind: a circle (one
// CIRCULARSTRING), a half-disc on a rectangle (a COMPOUNDCURVE of an arc
// and lines), a curve polygon with a curved hole, a MULTISURFACE of a
// curve polygon and a plain one, and small and large radii.
const curveFixtures = `id,WKT
1,"CURVEPOLYGON(CIRCULARSTRING(0 0,100 100,200 0,100 -100,0 0))"
2,"CURVEPOLYGON(COMPOUNDCURVE(CIRCULARSTRING(0 0,50 50,100 0),(100 0,100 -80,0 -80,0 0)))"
3,"CURVEPOLYGON(CIRCULARSTRING(0 0,1000 1000,2000 0,1000 -1000,0 0),CIRCULARSTRING(500 0,1000 500,1500 0,1000 -500,500 0))"
4,"MULTISURFACE(CURVEPOLYGON(CIRCULARSTRING(300 0,310 10,320 0,310 -10,300 0)),((400 0,410 0,410 10,400 0)))"
5,"CURVEPOLYGON(COMPOUNDCURVE(CIRCULARSTRING(0 0,0.3 0.05,0.6 0),(0.6 0,0.6 -0.2,0 -0.2,0 0)))"
`

// TestOGRCurvesLinearisedAsGDAL: geoingest linearises curved polygons
// exactly as GDAL does by default (OGR_G_GetLinearGeometry with
// OGR_ARC_STEPSIZE's default of 4 degrees, pinned in the reading child,
// whatever the worker's environment): for each fixture, in a GeoPackage
// and in GML 3, the same vertices as ogr2ogr -nlt MULTIPOLYGON writes
// (GDAL's own linearisation), so the same area to 1e-12. Against the
// true curves, a 4-degree chord loses 1 - sin(4°)/(4° in radians) =
// 0.081 % of a circle's area: the only difference there is to GDAL's, and
// none at all to GDAL's own output.
func TestOGRCurvesLinearisedAsGDAL(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "curves.csv")
	require.NoError(t, os.WriteFile(csv, []byte(curveFixtures), 0o644))
	gpkg := filepath.Join(dir, "curves.gpkg")
	ogr2ogr(t, "-f", "GPKG", gpkg, csv, "-a_srs", "EPSG:3857", "-nln", "curves", "-nlt", "MULTISURFACE")
	gml := filepath.Join(dir, "curves.gml")
	ogr2ogr(t, "-f", "GML", gml, gpkg, "-dsco", "FORMAT=GML3")
	for _, p := range []string{gpkg, gml} {
		// GDAL's linearisation: ogr2ogr's, with OGR_ARC_STEPSIZE unset.
		out := filepath.Join(t.TempDir(), "linear.geojson")
		cmd := exec.Command("ogr2ogr", "-f", "GeoJSON", out, p, "-nlt", "MULTIPOLYGON")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OGR_ARC_") {
				cmd.Env = append(cmd.Env, kv) // GDAL's defaults
			}
		}
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		var fc struct {
			Features []struct {
				Geometry struct {
					Coordinates [][][][2]float64 `json:"coordinates"`
				} `json:"geometry"`
			} `json:"features"`
		}
		require.NoError(t, json.Unmarshal(raw, &fc))

		fs, ls, err := readOGR(t, p, core.Options{})
		require.NoError(t, err, p)
		require.Len(t, fs, len(fc.Features), p)
		require.EqualValues(t, 5, ls[0].Linearised, p)
		for i, f := range fs {
			mp, ok := f.Geom.(*geom.MultiPolygon)
			require.True(t, ok, "%s feature %d: %T", p, i, f.Geom)
			want := fc.Features[i].Geometry.Coordinates
			require.Equal(t, len(want), mp.NumPolygons(), "%s feature %d", p, i)
			var gotArea, wantArea float64
			for j, poly := range want {
				got := mp.Polygon(j)
				require.Equal(t, len(poly), got.NumLinearRings(), "%s feature %d polygon %d", p, i, j)
				for k, ring := range poly {
					gr := got.LinearRing(k)
					require.Equal(t, len(ring), gr.NumCoords(), "%s feature %d polygon %d ring %d: vertices", p, i, j, k)
					for v, c := range ring {
						// GeoJSON's 15 significant digits.
						require.InDelta(t, c[0], gr.Coord(v).X(), 1e-9*math.Max(1, math.Abs(c[0])), "%s feature %d vertex %d", p, i, v)
						require.InDelta(t, c[1], gr.Coord(v).Y(), 1e-9*math.Max(1, math.Abs(c[1])), "%s feature %d vertex %d", p, i, v)
					}
					a, g := math.Abs(ringArea(ring)), math.Abs(ringArea(coords(gr)))
					if k > 0 {
						a, g = -a, -g // a hole
					}
					wantArea += a
					gotArea += g
				}
			}
			require.InEpsilon(t, wantArea, gotArea, 1e-12, "%s feature %d: area", p, i)
		}
		// The circle of radius 100: 90 chords of 4 degrees, 0.081 % under
		// the disc's area.
		circle := math.Abs(ringArea(coords(fs[0].Geom.(*geom.MultiPolygon).Polygon(0).LinearRing(0))))
		require.Equal(t, 91, fs[0].Geom.(*geom.MultiPolygon).Polygon(0).LinearRing(0).NumCoords(), p)
		deficit := 1 - circle/(math.Pi*100*100)
		require.InDelta(t, 1-math.Sin(4*math.Pi/180)/(4*math.Pi/180), deficit, 1e-9, p)
	}
}

func coords(r *geom.LinearRing) [][2]float64 {
	out := make([][2]float64, r.NumCoords())
	for i := range out {
		out[i] = [2]float64{r.Coord(i).X(), r.Coord(i).Y()}
	}
	return out
}

// ringArea is the shoelace area of a closed ring (signed).
func ringArea(r [][2]float64) float64 {
	var a float64
	for i := 0; i+1 < len(r); i++ {
		a += r[i][0]*r[i+1][1] - r[i+1][0]*r[i][1]
	}
	return a / 2
}
