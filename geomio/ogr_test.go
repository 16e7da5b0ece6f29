//go:build cgo && !geoingest_nogdal

package geomio

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// requireOGR2OGR skips the test when GDAL's ogr2ogr (gdal-bin, a test-only
// dependency) is missing, except in CI, where scripts/setup.sh --test
// installs it.
func requireOGR2OGR(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogr2ogr not found: scripts/setup.sh --test installs gdal-bin")
		}
		t.Skip("ogr2ogr not found: apt-get install gdal-bin to run this test")
	}
}

// ogr2ogr runs ogr2ogr with args, failing the test on error.
func ogr2ogr(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
	require.NoError(t, err, "ogr2ogr %s: %s", strings.Join(args, " "), out)
}

// readOGR reads every feature of path, returning them (geometries and
// properties copied) and the layers seen, in order.
func readOGR(t *testing.T, path string, opts Options) ([]Feature, []Layer, error) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var fs []Feature
	var ls []Layer
	for r.Next() {
		f := r.Feature()
		f.Properties = append([]byte(nil), f.Properties...)
		if f.Geom != nil { // the reader may reuse the geometry's buffers
			b, err := wkb.Marshal(f.Geom, wkb.NDR)
			require.NoError(t, err)
			f.Geom, err = wkb.Unmarshal(b)
			require.NoError(t, err)
		}
		if len(ls) == 0 || ls[len(ls)-1].Name != f.Layer {
			ls = append(ls, r.Layer())
		} else {
			ls[len(ls)-1] = r.Layer()
		}
		fs = append(fs, f)
	}
	return fs, ls, r.Err()
}

// planarArea sums the planar area of the MultiPolygons among fs.
func planarArea(fs []Feature) float64 {
	var a float64
	for _, f := range fs {
		if mp, ok := f.Geom.(*geom.MultiPolygon); ok {
			a += mp.Area()
		}
	}
	return a
}

const (
	srcCounties = corpusDir + "/six_counties/six_counties.shp"                                     // EPSG:4326, 6 polygons
	srcBristol  = corpusDir + "/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson" // EPSG:27700
)

// TestOGRFormats makes each format GDAL writes from corpus layers (one
// geographic, one projected) with ogr2ogr, and reads it back: the same
// features, areas, CRSs and properties as the source read by geomio's own
// readers, layer by layer.
func TestOGRFormats(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	counties, _, err := readOGR(t, srcCounties, Options{})
	require.NoError(t, err)
	bristol, _, err := readOGR(t, srcBristol, Options{})
	require.NoError(t, err)
	multi := []string{"-nlt", "PROMOTE_TO_MULTI"}

	for _, tc := range []struct {
		name   string
		make   func(out string)
		file   string
		layers []string // expected layers, in order
		srid   []int
		opts   Options
	}{
		{name: "gpkg", file: "x.gpkg", layers: []string{"counties", "bristol"}, srid: []int{4326, 27700}, make: func(out string) {
			ogr2ogr(t, append(multi, "-f", "GPKG", out, srcCounties, "-nln", "counties")...)
			ogr2ogr(t, append(multi, "-update", "-f", "GPKG", out, srcBristol, "-nln", "bristol")...)
		}},
		{name: "gdb.zip", file: "x.gdb.zip", layers: []string{"counties", "bristol"}, srid: []int{4326, 27700}, make: func(out string) {
			gdb := filepath.Join(dir, "x.gdb")
			ogr2ogr(t, append(multi, "-f", "OpenFileGDB", gdb, srcCounties, "-nln", "counties")...)
			ogr2ogr(t, append(multi, "-update", "-f", "OpenFileGDB", gdb, srcBristol, "-nln", "bristol")...)
			zipDir(t, out, dir, "x.gdb")
		}},
		{name: "fgb", file: "bristol.fgb", layers: []string{"bristol"}, srid: []int{27700}, make: func(out string) {
			ogr2ogr(t, append(multi, "-f", "FlatGeobuf", out, srcBristol, "-nln", "bristol")...)
		}},
		{name: "kml", file: "counties.kml", layers: []string{"six_counties"}, srid: []int{4326}, make: func(out string) {
			ogr2ogr(t, append(multi, "-f", "KML", out, srcCounties)...)
		}},
		{name: "gml", file: "bristol.gml", layers: []string{"bristol"}, srid: []int{27700}, make: func(out string) {
			ogr2ogr(t, append(multi, "-f", "GML", out, srcBristol, "-nln", "bristol")...)
		}},
		{name: "gml3 lat/long", file: "counties.gml", layers: []string{"counties"}, srid: []int{4326}, make: func(out string) {
			// GML 3 writes EPSG:4326 as a URN, latitude first.
			ogr2ogr(t, append(multi, "-f", "GML", "-dsco", "FORMAT=GML3", out, srcCounties, "-nln", "counties")...)
		}},
		{name: "mif", file: "counties.mif", layers: []string{"counties"}, srid: []int{4326}, make: func(out string) {
			ogr2ogr(t, append(multi, "-f", "MapInfo File", out, srcCounties)...)
		}},
		{name: "csv", file: "counties.csv", layers: []string{"counties"}, srid: []int{4326}, opts: Options{SourceSRID: 4326}, make: func(out string) {
			ogr2ogr(t, "-f", "CSV", "-lco", "GEOMETRY=AS_WKT", out, srcCounties)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.file)
			tc.make(out)
			fs, ls, err := readOGR(t, out, tc.opts)
			require.NoError(t, err)
			var names []string
			for i, l := range ls {
				names = append(names, l.Name)
				require.Equal(t, tc.srid[i], l.SRID, "layer %s SRID", l.Name)
			}
			require.Equal(t, tc.layers, names)
			for i, f := range fs {
				require.Equal(t, int64(i), f.Index, "Index counts across layers")
			}
			want := map[string][]Feature{"counties": counties, "six_counties": counties, "bristol": bristol}
			byLayer := map[string][]Feature{}
			for _, f := range fs {
				byLayer[f.Layer] = append(byLayer[f.Layer], f)
			}
			for layer, got := range byLayer {
				src := want[layer]
				require.Len(t, got, len(src), "layer %s", layer)
				require.InEpsilon(t, planarArea(src), planarArea(got), 1e-6, "layer %s area (axis order, rings)", layer)
				b, sb := bounds(got), bounds(src)
				require.InDelta(t, sb.Min(0), b.Min(0), 1e-3*max(1, abs(sb.Min(0))), "x is easting/longitude")
				for _, f := range got {
					require.True(t, json.Valid(f.Properties), "properties: %s", f.Properties)
				}
				name := map[string]string{"bristol": `:"Bristol 022"`}[layer]
				if name == "" {
					name = `:"District of Columbia"`
				}
				found := false
				for _, f := range got {
					found = found || strings.Contains(string(f.Properties), name)
				}
				require.True(t, found, "attributes: %s", name)
			}
		})
	}
}

func bounds(fs []Feature) *geom.Bounds {
	b := geom.NewBounds(geom.XY)
	for _, f := range fs {
		if f.Geom != nil {
			b.Extend(f.Geom)
		}
	}
	return b
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// zipDir zips base (a file or folder under dir) into out.
func zipDir(t *testing.T, out, dir, base string) {
	t.Helper()
	cmd := exec.Command("zip", "-qr", out, base)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "zip: %s", b)
}

func TestOGRRefusals(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	multi := []string{"-nlt", "PROMOTE_TO_MULTI"}
	gpkg := filepath.Join(dir, "x.gpkg")
	ogr2ogr(t, append(multi, "-f", "GPKG", gpkg, srcCounties, "-nln", "counties")...)

	t.Run("layer option", func(t *testing.T) {
		_, err := readAll2(t, gpkg, Options{Layers: []string{"nope"}})
		requireInputError(t, err, gpkg, `no layer "nope"`, `"counties"`)
	})
	t.Run("no geometry table", func(t *testing.T) {
		csv := filepath.Join(dir, "plain.csv")
		require.NoError(t, os.WriteFile(csv, []byte("a,b\n1,2\n"), 0o644))
		out := filepath.Join(dir, "plain.gpkg")
		ogr2ogr(t, "-f", "GPKG", out, csv)
		_, err := readAll2(t, out, Options{})
		requireInputError(t, err, out, "no layer with geometry")
	})
	t.Run("csv without a geometry column", func(t *testing.T) {
		csv := filepath.Join(dir, "nogeom.csv")
		require.NoError(t, os.WriteFile(csv, []byte("a,shape\n1,POINT(1 2)\n"), 0o644))
		_, err := readAll2(t, csv, Options{})
		requireInputError(t, err, csv, "no layer with geometry")
	})
	t.Run("flatgeobuf of another version", func(t *testing.T) {
		fgb := filepath.Join(dir, "v9.fgb")
		ogr2ogr(t, append(multi, "-f", "FlatGeobuf", fgb, srcCounties)...)
		b, err := os.ReadFile(fgb)
		require.NoError(t, err)
		b[3] = 9
		require.NoError(t, os.WriteFile(fgb, b, 0o644))
		_, err = readAll2(t, fgb, Options{})
		requireInputError(t, err, fgb, "FlatGeobuf")
	})
}

func readAll2(t *testing.T, path string, opts Options) ([]Feature, error) {
	fs, _, err := readOGR(t, path, opts)
	return fs, err
}

func requireInputError(t *testing.T, err error, file string, contains ...string) {
	t.Helper()
	require.Error(t, err)
	var ie *Error
	require.True(t, errors.As(err, &ie), "an *Error: %v", err)
	require.Contains(t, err.Error(), file, "names the file")
	for _, c := range contains {
		require.Contains(t, err.Error(), c)
	}
}
