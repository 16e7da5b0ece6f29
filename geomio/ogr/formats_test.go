//go:build cgo && !geoingest_nogdal

package ogr_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

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
	t.Run("mapinfo without its parts", func(t *testing.T) {
		// A .tab without its .map read as a table without geometry, a
		// .mif without its .mid landed with no attributes.
		sub := filepath.Join(dir, "mi")
		require.NoError(t, os.MkdirAll(sub, 0o755))
		ogr2ogr(t, append(multi, "-f", "MapInfo File", filepath.Join(sub, "c.tab"), srcCounties)...)
		ogr2ogr(t, append(multi, "-f", "MapInfo File", filepath.Join(sub, "c.mif"), srcCounties)...)
		require.NoError(t, os.Remove(filepath.Join(sub, "c.map")))
		require.NoError(t, os.Remove(filepath.Join(sub, "c.mid")))
		_, err := readAll2(t, filepath.Join(sub, "c.tab"), Options{})
		requireInputError(t, err, "c.tab", "missing .map beside the .tab")
		_, err = readAll2(t, filepath.Join(sub, "c.mif"), Options{})
		requireInputError(t, err, "c.mif", "missing .mid beside the .mif")
		// In a zip too, naming the entry.
		z := filepath.Join(dir, "mi.zip")
		zipDir(t, z, sub, "c.tab", "c.dat", "c.id")
		_, err = readAll2(t, z, Options{})
		requireInputError(t, err, z+"/c.tab", "missing .map beside the .tab")
	})
	t.Run("csv of EWKT", func(t *testing.T) {
		// As PostGIS exports ST_AsEWKT: GDAL cannot read it.
		csv := filepath.Join(dir, "ewkt.csv")
		require.NoError(t, os.WriteFile(csv, []byte("id,the_geom\n1,\"SRID=4326;POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644))
		_, err := readAll2(t, csv, Options{SourceSRID: 4326})
		requireInputError(t, err, csv, `layer "ewkt" feature 0: unreadable (the geometry column must hold WKT or hex WKB; EWKT's SRID=N; prefix is not read`)
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

// TestOGRLayerChoice: Options.Layers reads only the layers named.
func TestOGRLayerChoice(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	gpkg := filepath.Join(dir, "x.gpkg")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, srcCounties, "-nln", "counties")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-update", "-f", "GPKG", gpkg, srcBristol, "-nln", "bristol")
	fs, ls, err := readOGR(t, gpkg, Options{Layers: []string{"bristol"}})
	require.NoError(t, err)
	require.Len(t, ls, 1)
	require.Equal(t, "bristol", ls[0].Name)
	require.Equal(t, FormatGPKG, ls[0].Format)
	require.Equal(t, int64(0), fs[0].Index)
}

// TestOGRCurvesAndZM: curves are linearised and counted per layer
// (Layer.Linearised), Z and M dropped and counted (Layer.DroppedZM), in a GeoPackage and a File
// Geodatabase. A curve type whose rings are straight (a CurvePolygon or
// MultiSurface of line strings, as a CURVEPOLYGON layer of QGIS or
// ArcGIS holds) is read as its polygon, not counted as linearised.
func TestOGRCurvesAndZM(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "curves.csv")
	require.NoError(t, os.WriteFile(csv, []byte(`id,WKT
1,"CURVEPOLYGON ZM (CIRCULARSTRING ZM (0 0 5 7,1 1 5 7,2 0 5 7,1 -1 5 7,0 0 5 7))"
2,"POLYGON ZM ((0 0 1 2,1 0 1 2,1 1 1 2,0 0 1 2))"
3,"MULTISURFACE ZM (CURVEPOLYGON ZM (COMPOUNDCURVE ZM (CIRCULARSTRING ZM (0 0 1 2,1 1 1 2,2 0 1 2),(2 0 1 2,0 0 1 2))))"
4,"CURVEPOLYGON ZM ((0 0 1 2,3 0 1 2,3 3 1 2,0 0 1 2))"
5,"MULTISURFACE ZM (((0 0 1 2,4 0 1 2,4 4 1 2,0 0 1 2)),CURVEPOLYGON ZM ((5 5 1 2,6 5 1 2,6 6 1 2,5 5 1 2)))"
`), 0o644))
	gpkg := filepath.Join(dir, "curves.gpkg")
	ogr2ogr(t, "-f", "GPKG", gpkg, csv, "-a_srs", "EPSG:3857", "-nlt", "GEOMETRYZM", "-nln", "curves")
	gdb := filepath.Join(dir, "curves.gdb")
	ogr2ogr(t, "-f", "OpenFileGDB", gdb, csv, "-a_srs", "EPSG:3857", "-nlt", "MULTISURFACE", "-dim", "XYZM", "-nln", "curves")
	zipDir(t, filepath.Join(dir, "curves.gdb.zip"), dir, "curves.gdb")
	// GDAL's OpenFileGDB writer stores the third feature (a compound
	// curve) and the fifth (two parts) without their Z and M, as ogrinfo
	// shows: three with Z/M there.
	zm := map[string]int64{gpkg: 5, filepath.Join(dir, "curves.gdb.zip"): 3}
	for _, p := range []string{gpkg, filepath.Join(dir, "curves.gdb.zip")} {
		fs, ls, err := readOGR(t, p, Options{})
		require.NoError(t, err, p)
		require.Len(t, fs, 5, p)
		require.Equal(t, int64(2), ls[0].Linearised, "%s: two curved features", p)
		require.Equal(t, zm[p], ls[0].DroppedZM, "%s: features with Z and M", p)
		for _, f := range fs {
			mp, ok := f.Geom.(*geom.MultiPolygon)
			require.True(t, ok, "%s: %T", p, f.Geom)
			require.Equal(t, geom.XY, mp.Layout(), "Z and M dropped")
			require.NotZero(t, mp.Area())
		}
		// The circle of radius 1: linearised, close to pi.
		require.InDelta(t, math.Pi, math.Abs(fs[0].Geom.(*geom.MultiPolygon).Area()), 0.01, p)
		// The straight-ringed curve types: exactly their triangles.
		require.InDelta(t, 4.5, math.Abs(fs[3].Geom.(*geom.MultiPolygon).Area()), 1e-9, p)
		require.Equal(t, 2, fs[4].Geom.(*geom.MultiPolygon).NumPolygons(), p)
		require.InDelta(t, 8.5, math.Abs(fs[4].Geom.(*geom.MultiPolygon).Area()), 1e-9, p)
	}
}

// TestOGRKMLMultiGeometryAndFolders: KML folders are layers; the polygons
// of a MultiGeometry are kept (its points dropped), and a point placemark
// passes through as a point for the wrong-type policy to count.
func TestOGRKMLMultiGeometryAndFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kml := filepath.Join(dir, "x.kml")
	poly := `<Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon>`
	require.NoError(t, os.WriteFile(kml, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document>
<Folder><name>parcels</name>
<Placemark><name>a</name><MultiGeometry>`+poly+poly+`<Point><coordinates>5,5</coordinates></Point></MultiGeometry></Placemark>
<Placemark><name>b</name><Point><coordinates>1,2</coordinates></Point></Placemark>
</Folder>
<Folder><name>other</name><Placemark><name>Zoë</name>`+poly+`</Placemark></Folder>
</Document></kml>`), 0o644))
	fs, ls, err := readOGR(t, kml, Options{})
	require.NoError(t, err)
	require.Len(t, ls, 2)
	require.Equal(t, "parcels", ls[0].Name)
	require.Equal(t, "other", ls[1].Name)
	require.Equal(t, 4326, ls[0].SRID)
	require.Len(t, fs, 3)
	mp, ok := fs[0].Geom.(*geom.MultiPolygon)
	require.True(t, ok, "%T", fs[0].Geom)
	require.Equal(t, 2, mp.NumPolygons(), "the MultiGeometry's polygons, its point dropped")
	_, ok = fs[1].Geom.(*geom.Point)
	require.True(t, ok, "a point placemark stays a point: %T", fs[1].Geom)
	require.Contains(t, string(fs[2].Properties), `"Zoë"`)

	// The same as a KMZ.
	zipDir(t, filepath.Join(dir, "x.kmz"), dir, "x.kml")
	fz, _, err := readOGR(t, filepath.Join(dir, "x.kmz"), Options{})
	require.NoError(t, err)
	require.Len(t, fz, 3)
}

// TestOGRGMLGeometryFields: a GML layer with two polygon fields (written
// by ogr2ogr with its .xsd; coordinates latitude first, as the EPSG:4326
// URN defines them) is read through the first, and says so
// (Layer.GeometryField); Options.GeometryField chooses the other.
func TestOGRGMLGeometryFields(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	gml := filepath.Join(dir, "two.gml")
	ogr2ogr(t, "-f", "GML", "-dsco", "FORMAT=GML3", gml, srcCounties, "-dialect", "SQLITE", "-nln", "parcel",
		"-sql", "SELECT ST_Buffer(ST_Centroid(geometry), 0.001) AS centre, geometry AS footprint, NAME FROM six_counties")
	counties, _, err := readOGR(t, srcCounties, Options{})
	require.NoError(t, err)

	fs, ls, err := readOGR(t, gml, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 6)
	require.Equal(t, "centre", ls[0].GeometryField)
	require.Equal(t, 4326, ls[0].SRID)
	require.InDelta(t, 6*math.Pi*1e-6, math.Abs(planarArea(fs)), 1e-7, "the small circles")
	require.Less(t, bounds(fs).Min(0), -76.0, "longitude first")
	_, err = os.Stat(filepath.Join(dir, "two.gfs"))
	require.True(t, os.IsNotExist(err), "no .gfs written beside the upload")

	fs, ls, err = readOGR(t, gml, Options{GeometryField: "footprint"})
	require.NoError(t, err)
	require.Equal(t, "footprint", ls[0].GeometryField)
	require.InEpsilon(t, math.Abs(planarArea(counties)), math.Abs(planarArea(fs)), 1e-9)

	_, _, err = readOGR(t, gml, Options{GeometryField: "nope"})
	requireInputError(t, err, gml, `no geometry field "nope"`, `"centre", "footprint"`)
}

// TestOGREncodings: a MapInfo table in a Windows code page comes out in
// UTF-8 (GDAL decodes the charset the .tab names); a CSV in Latin-1
// (which names no encoding) is refused with a message to give
// --encoding, and read with DefaultEncoding.
func TestOGREncodings(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	tab := filepath.Join(dir, "gre.tab")
	ogr2ogr(t, "-f", "MapInfo File", tab, corpusDir+"/grenada_utf8_cyrillic/gre.shp", "-lco", "ENCODING=CP1251", "-nlt", "PROMOTE_TO_MULTI")
	head, err := os.ReadFile(tab)
	require.NoError(t, err)
	require.Contains(t, string(head), "WindowsCyrillic")
	fs, ls, err := readOGR(t, tab, Options{})
	require.NoError(t, err)
	require.Equal(t, "UTF-8", ls[0].Encoding)
	require.Contains(t, string(fs[0].Properties), `"name_ru":"Гренада"`)

	csv := filepath.Join(dir, "latin1.csv")
	require.NoError(t, os.WriteFile(csv, []byte("name,WKT\n\"Z\xf6e\",\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644))
	_, _, err = readOGR(t, csv, Options{SourceSRID: 4326})
	requireInputError(t, err, csv, `field "name": invalid UTF-8`, "give the file's text encoding as the encoding option")
	var ge *Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, CodeEncoding, ge.Code) // ingest.OptionHint words it with --encoding
	fs, ls, err = readOGR(t, csv, Options{SourceSRID: 4326, DefaultEncoding: "latin1"})
	require.NoError(t, err)
	require.Equal(t, "ISO-8859-1", ls[0].Encoding)
	require.Contains(t, string(fs[0].Properties), `"name":"Zöe"`)
}

// TestGDALNeverLoadedInTheParent: reading a shapefile or a GeoPackage
// leaves libgdal unloaded in the reading process (it costs a process
// about 18 MB, and GDAL's parsing of an upload runs in a contained child
// process of its own). Run in a child process of the test binary, which
// has loaded nothing else.
func TestGDALNeverLoadedInTheParent(t *testing.T) {
	if p := os.Getenv("GEOINGEST_TEST_LOADED"); p != "" {
		fs, _, err := readOGR(t, p, Options{})
		require.NoError(t, err)
		require.NotEmpty(t, fs)
		maps, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		if strings.Contains(string(maps), "libgdal") {
			os.Stdout.WriteString("GDAL-LOADED\n")
		} else {
			os.Stdout.WriteString("GDAL-NOT-LOADED\n")
		}
		return
	}
	requireOGR2OGR(t)
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc/self/maps")
	}
	t.Parallel()
	gpkg := filepath.Join(t.TempDir(), "c.gpkg")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, srcCounties)
	for _, file := range []string{srcCounties, gpkg} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestGDALNeverLoadedInTheParent$")
		cmd.Env = append(os.Environ(), "GEOINGEST_TEST_LOADED="+file)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "GDAL-NOT-LOADED\n", file)
	}
}

// TestOGRLayerCRS: a layer's CRS goes through package crs as a .prj does:
// a GeoPackage holding a bound CRS (TOWGS84) resolves as the shapefile
// it came from does, and a FlatGeobuf without a CRS has none (SRID 0, for
// the caller to refuse unless --source-srid), or the one SourceSRID gives.
func TestOGRLayerCRS(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	zipped := corpusDir + "/train_stations_boundcrs_zip/train_stations.zip"
	_, shp, err := readOGR(t, zipped, Options{})
	require.NoError(t, err)
	gpkg := filepath.Join(dir, "stations.gpkg")
	ogr2ogr(t, "-f", "GPKG", gpkg, "/vsizip/"+zipped+"/train_stations.shp", "-nln", "stations")
	_, ls, err := readOGR(t, gpkg, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, shp[0].CRS.Method)
	require.Equal(t, shp[0].CRS.Method, ls[0].CRS.Method, "%+v vs %+v", shp[0].CRS, ls[0].CRS)
	require.Equal(t, shp[0].CRS.EPSG, ls[0].CRS.EPSG)

	csv := filepath.Join(dir, "nocrs.csv")
	require.NoError(t, os.WriteFile(csv, []byte("id,WKT\n1,\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644))
	fgb := filepath.Join(dir, "nocrs.fgb")
	ogr2ogr(t, "-f", "FlatGeobuf", fgb, csv, "-nlt", "POLYGON")
	_, ls, err = readOGR(t, fgb, Options{})
	require.NoError(t, err)
	require.Zero(t, ls[0].SRID)
	require.Empty(t, ls[0].CRS.Method)
	_, ls, err = readOGR(t, fgb, Options{SourceSRID: 2154})
	require.NoError(t, err)
	require.Equal(t, 2154, ls[0].SRID)
}

// TestOGRCSVVariants: the CSVs that tools and people write: QGIS's
// "wkt_geom" column, semicolons, a UTF-8 BOM, CRLF, quoted text with
// newlines and quotes in it, the geometry column last; and a CSV with two
// columns whose names could be the geometry's, where the best-named one is
// read (a "wkt_source" note before the "geometry" column).
func TestOGRCSVVariants(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	const square = "POLYGON ((0 0,2 0,2 2,0 2,0 0))"
	for _, tc := range []struct{ name, text string }{
		{"qgis.csv", "wkt_geom,id,name\n\"" + square + "\",1,a\n"},
		{"semicolon.csv", "\xef\xbb\xbfid;name;WKT\r\n1;\"two\r\nlines, \"\"quoted\"\"\";\"" + square + "\"\r\n"},
		{"two.csv", "id,wkt_source,geometry\n1,surveyed,\"" + square + "\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			require.NoError(t, os.WriteFile(p, []byte(tc.text), 0o644))
			fs, _, err := readOGR(t, p, Options{SourceSRID: 4326})
			require.NoError(t, err)
			require.Len(t, fs, 1)
			mp, ok := fs[0].Geom.(*geom.MultiPolygon)
			require.True(t, ok, "%T", fs[0].Geom)
			require.InDelta(t, 4, mp.Area(), 1e-12)
			var props map[string]any
			require.NoError(t, json.Unmarshal(fs[0].Properties, &props))
			require.Equal(t, "1", props["id"], "%s", fs[0].Properties)
		})
	}

	// --geometry-field names the column, whatever its name; one the CSV
	// lacks is refused.
	shape := filepath.Join(dir, "shape.csv")
	require.NoError(t, os.WriteFile(shape, []byte("id,shape,geometry\n1,\""+square+"\",not a geometry\n"), 0o644))
	fs, _, err := readOGR(t, shape, Options{SourceSRID: 4326, GeometryField: "SHAPE"})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.InDelta(t, 4, fs[0].Geom.(*geom.MultiPolygon).Area(), 1e-12)
	require.JSONEq(t, `{"id":"1","geometry":"not a geometry"}`, string(fs[0].Properties))
	_, err = readAll2(t, shape, Options{SourceSRID: 4326, GeometryField: "nope"})
	requireInputError(t, err, shape, `no column "nope" to read the geometry from in this CSV`)
}

// TestOGRGeometryFieldOfOneFieldLayer: a geometry field asked for by a
// name the layer lacks is refused, naming the file, the layer and the
// field it has, even on a layer with one geometry field (a GeoPackage's
// "geom", a FlatGeobuf's unnamed one); the field's own name, in any case,
// reads it. Only the layers read are held to it: with --layer choosing a
// layer that has the field, a layer without it is not refused.
func TestOGRGeometryFieldOfOneFieldLayer(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	gpkg := filepath.Join(dir, "one.gpkg")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, srcCounties, "-nln", "counties", "-lco", "GEOMETRY_NAME=footprint")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-update", "-f", "GPKG", gpkg, srcBristol, "-nln", "bristol")
	fgb := filepath.Join(dir, "one.fgb")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "FlatGeobuf", fgb, srcBristol, "-nln", "bristol")

	_, err := readAll2(t, gpkg, Options{GeometryField: "nope"})
	requireInputError(t, err, gpkg, `layer "counties"`, `no geometry field "nope" (the layer has "footprint")`)
	_, err = readAll2(t, fgb, Options{GeometryField: "nope"})
	requireInputError(t, err, fgb, `layer "bristol"`, `no geometry field "nope"`)

	fs, ls, err := readOGR(t, gpkg, Options{GeometryField: "FOOTPRINT", Layers: []string{"counties"}})
	require.NoError(t, err, "bristol (geom) is not read")
	require.Len(t, fs, 6)
	require.Len(t, ls, 1)
	_, err = readAll2(t, gpkg, Options{GeometryField: "footprint"})
	requireInputError(t, err, gpkg, `layer "bristol"`, `no geometry field "footprint" (the layer has "geom")`)
}

// TestOGRZipDatasets: the File Geodatabase zips people make. A zip of a
// geodatabase's contents (its files at the zip's root, or in a folder not
// named .gdb) is read as the geodatabase. A zip of several sources (two
// .gdb folders with a layer "parcels" each, and a shapefile) names each
// GDAL layer by its dataset's path in the zip, so that none is merged
// with another; --layer picks among them across the zip, and a name no
// source has is refused, listing the zip's layers.
func TestOGRZipDatasets(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	multi := []string{"-nlt", "PROMOTE_TO_MULTI"}
	a := filepath.Join(dir, "A.gdb")
	ogr2ogr(t, append(multi, "-f", "OpenFileGDB", a, srcCounties, "-nln", "parcels")...)
	b := filepath.Join(dir, "B.gdb")
	ogr2ogr(t, append(multi, "-f", "OpenFileGDB", b, srcBristol, "-nln", "parcels")...)

	t.Run("contents at the root", func(t *testing.T) {
		z := filepath.Join(dir, "Parcels.gdb.zip")
		cmd := exec.Command("sh", "-c", "zip -qr "+z+" .")
		cmd.Dir = a
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		fs, ls, err := readOGR(t, z, Options{})
		require.NoError(t, err)
		require.Len(t, fs, 6)
		require.Equal(t, "parcels", ls[0].Name)
		require.Equal(t, FormatFileGDB, ls[0].Format)

		// A shapefile beside the geodatabase's files stays a layer
		// of its own.
		zipDir(t, z, corpusDir+"/six_counties", "six_counties.shp", "six_counties.shx", "six_counties.dbf", "six_counties.prj")
		fs, ls, err = readOGR(t, z, Options{})
		require.NoError(t, err)
		require.Len(t, fs, 12)
		require.Equal(t, []string{"Parcels.gdb/parcels", "six_counties"}, []string{ls[0].Name, ls[1].Name})
	})
	t.Run("contents in a folder", func(t *testing.T) {
		nested := filepath.Join(dir, "nested", "Export", "2024")
		require.NoError(t, os.MkdirAll(filepath.Dir(nested), 0o755))
		require.NoError(t, exec.Command("cp", "-r", b, nested).Run())
		z := filepath.Join(dir, "export.zip")
		zipDir(t, z, filepath.Join(dir, "nested"), "Export")
		fs, ls, err := readOGR(t, z, Options{})
		require.NoError(t, err)
		require.Len(t, fs, 72)
		require.Equal(t, 27700, ls[0].SRID)
	})

	z := filepath.Join(dir, "two.zip")
	zipDir(t, z, dir, "A.gdb", "B.gdb")
	zipDir(t, z, corpusDir+"/six_counties", "six_counties.shp", "six_counties.shx", "six_counties.dbf", "six_counties.prj")
	fs, ls, err := readOGR(t, z, Options{})
	require.NoError(t, err)
	var names []string
	count := map[string]int{}
	for _, l := range ls {
		names = append(names, l.Name)
	}
	for _, f := range fs {
		count[f.Layer]++
	}
	require.Equal(t, []string{"A.gdb/parcels", "B.gdb/parcels", "six_counties"}, names)
	require.Equal(t, map[string]int{"A.gdb/parcels": 6, "B.gdb/parcels": 72, "six_counties": 6}, count)
	require.Equal(t, []int{4326, 27700, 4326}, []int{ls[0].SRID, ls[1].SRID, ls[2].SRID})

	fs, ls, err = readOGR(t, z, Options{Layers: []string{"B.gdb/parcels", "six_counties"}})
	require.NoError(t, err)
	require.Len(t, fs, 78)
	require.Len(t, ls, 2)
	require.Equal(t, "B.gdb/parcels", ls[0].Name)

	_, err = readAll2(t, z, Options{Layers: []string{"parcels"}})
	requireInputError(t, err, z, `no layer "parcels"`, `"A.gdb/parcels", "B.gdb/parcels"`)
	_, err = readAll2(t, corpusDir+"/coutwildrnp_zip/coutwildrnp.zip", Options{Layers: []string{"nope"}})
	requireInputError(t, err, "coutwildrnp.zip", `no layer "nope" (the layers with geometry are "coutwildrnp")`)
}

// TestOGRSurfaces: 3D surfaces (a File Geodatabase's multipatch buildings
// come back from GDAL as TINs and multipolygons; a GeoPackage may hold
// TINs, polyhedral surfaces and triangles) are read as the MultiPolygon
// of their faces, Z dropped, as ogr2ogr -nlt MULTIPOLYGON reads them;
// they failed as "wkb: unsupported type: 16". A collection of surfaces
// is their faces too.
func TestOGRSurfaces(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "surfaces.csv")
	require.NoError(t, os.WriteFile(csv, []byte(`id,WKT
1,"TIN Z (((0 0 5,0 1 5,1 1 5,0 0 5)),((0 0 5,1 1 5,1 0 5,0 0 5)))"
2,"POLYHEDRALSURFACE Z (((2 0 0,4 0 0,4 1 0,2 1 0,2 0 0)),((2 0 0,2 1 0,2 1 9,2 0 9,2 0 0)))"
3,"TRIANGLE ((0 0,0 3,3 3,0 0))"
4,"GEOMETRYCOLLECTION Z (TIN Z (((0 0 0,0 1 0,1 1 0,0 0 0))),POLYGON Z ((2 2 0,3 2 0,3 3 0,2 2 0)))"
`), 0o644))
	gpkg := filepath.Join(dir, "surfaces.gpkg")
	ogr2ogr(t, "-f", "GPKG", gpkg, csv, "-a_srs", "EPSG:3857", "-nlt", "GEOMETRYZ", "-nln", "surfaces")
	gdb := filepath.Join(dir, "bldg.gdb")
	ogr2ogr(t, "-f", "OpenFileGDB", gdb, csv, "-a_srs", "EPSG:3857", "-nlt", "GEOMETRYZ", "-nln", "bldg", "-where", "id IN ('1', '2')")
	zipDir(t, filepath.Join(dir, "bldg.gdb.zip"), dir, "bldg.gdb")

	// Faces: the TIN's two triangles (area 1), the surface's two
	// rectangles (2, and 0 seen from above), the triangle (4.5), the
	// collection's triangle and polygon (0.5 + 0.5).
	for p, want := range map[string][]float64{gpkg: {1, 2, 4.5, 1}, filepath.Join(dir, "bldg.gdb.zip"): {1, 2}} {
		fs, ls, err := readOGR(t, p, Options{})
		require.NoError(t, err, p)
		require.Len(t, fs, len(want), p)
		for i, f := range fs {
			mp, ok := f.Geom.(*geom.MultiPolygon)
			require.True(t, ok, "%s feature %d: %T", p, i, f.Geom)
			require.Equal(t, geom.XY, mp.Layout())
			a := 0.0
			for j := 0; j < mp.NumPolygons(); j++ {
				a += math.Abs(mp.Polygon(j).Area())
			}
			require.InDelta(t, want[i], a, 1e-9, "%s feature %d", p, i)
		}
		require.Equal(t, int64(0), ls[0].Linearised, p)
	}
}

// TestOGRZipCSVAndXML: a zip that holds only CSV files with WKT, or only
// GML named .xml (as INSPIRE downloads name it) with its schema, is read
// as those layers (it was refused as holding no known format); beside a
// shapefile, a .csv or .xml is metadata and not read.
func TestOGRZipCSVAndXML(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	ogr2ogr(t, "-f", "CSV", "-lco", "GEOMETRY=AS_WKT", filepath.Join(dir, "counties.csv"), srcCounties, "-nln", "counties")
	ogr2ogr(t, "-f", "GML", "-dsco", "FORMAT=GML3.2", filepath.Join(dir, "cp.gml"), srcBristol, "-nln", "cp", "-nlt", "PROMOTE_TO_MULTI")
	require.NoError(t, os.Rename(filepath.Join(dir, "cp.gml"), filepath.Join(dir, "cp.xml")))

	csvZip := filepath.Join(dir, "csv.zip")
	zipDir(t, csvZip, dir, "counties.csv")
	fs, ls, err := readOGR(t, csvZip, Options{SourceSRID: 4326})
	require.NoError(t, err)
	require.Len(t, fs, 6)
	require.Equal(t, FormatCSV, ls[0].Format)

	xmlZip := filepath.Join(dir, "xml.zip")
	zipDir(t, xmlZip, dir, "cp.xml", "cp.xsd")
	fs, ls, err = readOGR(t, xmlZip, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 72)
	require.Equal(t, FormatGML, ls[0].Format)
	require.Equal(t, 27700, ls[0].SRID)

	both := filepath.Join(dir, "both.zip")
	zipDir(t, both, dir, "counties.csv", "cp.xml")
	zipDir(t, both, corpusDir+"/six_counties", "six_counties.shp", "six_counties.shx", "six_counties.dbf", "six_counties.prj")
	fs, ls, err = readOGR(t, both, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 6)
	require.Len(t, ls, 1)
	require.Equal(t, FormatShapefile, ls[0].Format)
}
