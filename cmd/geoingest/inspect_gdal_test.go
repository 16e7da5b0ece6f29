package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/ingest/inspect"
	"github.com/stretchr/testify/require"
)

// fileSet is one upload of the inspect corpus: the path geoingest
// inspects, and what ogrinfo opens to list the same layers (a zip's
// shapefiles and File Geodatabase through /vsizip/, each on its own).
type fileSet struct {
	name    string
	path    string
	ogrinfo []string
}

// gdalLayer is one layer as ogrinfo -so -al lists it, or as inspect
// describes it: its name, the class of its geometry type and its feature
// count.
type gdalLayer struct {
	name  string
	class []string // point, line, polygon, none, any; several for several geometry fields
	count int64
}

// inspectCorpus is the corpus of TestInspectListsWhatGDALSees: every file
// set of testdata/corpus, and multi-layer GeoPackage, File Geodatabase,
// GML, KML, CSV, MapInfo and FlatGeobuf files made from it with ogr2ogr,
// with point, line, non-spatial, empty, curved and CRS-less or refused
// layers beside polygon layers.
func inspectCorpus(t *testing.T, dir string) []fileSet {
	t.Helper()
	const corpus = "../../testdata/corpus"
	var sets []fileSet
	entries, err := os.ReadDir(corpus)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(corpus, e.Name()))
		require.NoError(t, err)
		for _, f := range files {
			p, err := filepath.Abs(filepath.Join(corpus, e.Name(), f.Name()))
			require.NoError(t, err)
			switch strings.ToLower(filepath.Ext(f.Name())) {
			case ".shp", ".json", ".geojson":
				sets = append(sets, fileSet{name: e.Name(), path: p, ogrinfo: []string{p}})
			case ".zip":
				sets = append(sets, fileSet{name: e.Name(), path: p, ogrinfo: zipTargets(t, p)})
			}
		}
	}

	abs := func(rel string) string {
		p, err := filepath.Abs(filepath.Join(corpus, rel))
		require.NoError(t, err)
		return p
	}
	var (
		msoa     = abs("bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson")
		boundary = abs("bristol_boundary_bng/boundary_bristol_bng.geojson")
		counties = abs("six_counties/six_counties.shp")
		stations = "/vsizip/" + abs("train_stations_boundcrs_zip/train_stations.zip")
		lines    = abs("sweref99_linestringzm/data_corruption_error.shp")
	)
	table := filepath.Join(dir, "owners.csv")
	require.NoError(t, os.WriteFile(table, []byte("parcel,owner\n1,Ada\n2,Brook\n3,Cole\n"), 0o644))
	curves := filepath.Join(dir, "curves.csv")
	require.NoError(t, os.WriteFile(curves, []byte(`id,WKT
1,"CURVEPOLYGON(CIRCULARSTRING(0 0,100 100,200 0,100 -100,0 0))"
2,"CURVEPOLYGON(COMPOUNDCURVE(CIRCULARSTRING(0 0,50 50,100 0),(100 0,100 -80,0 -80,0 0)))"
3,"MULTISURFACE(CURVEPOLYGON(CIRCULARSTRING(300 0,310 10,320 0,310 -10,300 0)),((400 0,410 0,410 10,400 0)))"
`), 0o644))
	conv := func(args ...string) {
		t.Helper()
		out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
		require.NoError(t, err, "ogr2ogr %s: %s", strings.Join(args, " "), out)
	}
	zipDir := func(name, folder string) string {
		t.Helper()
		z := exec.Command("zip", "-qr", name, folder)
		z.Dir = dir
		out, err := z.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return filepath.Join(dir, name)
	}
	add := func(name, p string, targets ...string) {
		if len(targets) == 0 {
			targets = []string{p}
		}
		sets = append(sets, fileSet{name: name, path: p, ogrinfo: targets})
	}

	// A GeoPackage of polygons, points, lines, a table without geometry
	// and an empty polygon layer.
	mixed := filepath.Join(dir, "mixed.gpkg")
	conv("-f", "GPKG", mixed, msoa, "-nln", "polys")
	conv("-update", "-f", "GPKG", mixed, stations, "-nln", "stations")
	conv("-update", "-f", "GPKG", mixed, lines, "-nln", "lines")
	conv("-update", "-f", "GPKG", mixed, table, "-nln", "owners")
	conv("-update", "-f", "GPKG", mixed, boundary, "-nln", "empty", "-where", "1=0")
	add("gpkg_mixed_layers", mixed)
	// One layer's CRS geoingest refuses (EPSG:2016, its grid missing),
	// between two it reads.
	refused := filepath.Join(dir, "refused.gpkg")
	conv("-f", "GPKG", refused, msoa, "-nln", "bristol")
	conv("-update", "-f", "GPKG", refused, msoa, "-a_srs", "EPSG:2016", "-nln", "quebec")
	conv("-update", "-f", "GPKG", refused, counties, "-nln", "counties", "-nlt", "PROMOTE_TO_MULTI")
	add("gpkg_refused_crs", refused)
	// A GeoPackage whose one layer names no CRS.
	nocrs := filepath.Join(dir, "nocrs.gpkg")
	conv("-f", "GPKG", nocrs, boundary, "-a_srs", "None", "-nln", "boundary")
	add("gpkg_no_crs", nocrs)
	// A File Geodatabase whose polygon layers have a CRS but one, with a
	// table without geometry.
	conv("-f", "OpenFileGDB", filepath.Join(dir, "parcels.gdb"), counties, "-nln", "counties", "-nlt", "PROMOTE_TO_MULTI")
	conv("-update", "-f", "OpenFileGDB", filepath.Join(dir, "parcels.gdb"), msoa, "-nln", "msoa")
	conv("-update", "-f", "OpenFileGDB", filepath.Join(dir, "parcels.gdb"), boundary, "-a_srs", "None", "-nln", "synthetic")
	conv("-update", "-f", "OpenFileGDB", filepath.Join(dir, "parcels.gdb"), table, "-nln", "owners")
	gdb := zipDir("parcels.gdb.zip", "parcels.gdb")
	add("filegdb_one_layer_no_crs", gdb, "/vsizip/"+gdb+"/parcels.gdb")
	// A File Geodatabase of polygons, points and lines.
	conv("-f", "OpenFileGDB", filepath.Join(dir, "network.gdb"), msoa, "-nln", "zones")
	conv("-update", "-f", "OpenFileGDB", filepath.Join(dir, "network.gdb"), stations, "-nln", "stations")
	conv("-update", "-f", "OpenFileGDB", filepath.Join(dir, "network.gdb"), lines, "-nln", "lines", "-dim", "XY")
	network := zipDir("network.gdb.zip", "network.gdb")
	add("filegdb_points_lines", network, "/vsizip/"+network+"/network.gdb")
	// GML of two feature types, with its schema beside it.
	twoGPKG := filepath.Join(dir, "two.gpkg")
	conv("-f", "GPKG", twoGPKG, counties, "-nln", "counties", "-nlt", "PROMOTE_TO_MULTI")
	conv("-update", "-f", "GPKG", twoGPKG, stations, "-nln", "stations", "-t_srs", "EPSG:4326")
	gml := filepath.Join(dir, "two.gml")
	conv("-f", "GML", gml, twoGPKG)
	add("gml_two_feature_types", gml)
	// KML of two folders.
	kml := filepath.Join(dir, "two.kml")
	conv("-f", "KML", kml, twoGPKG)
	add("kml_two_folders", kml)
	// CSV with WKT polygons, and a CSV without geometry.
	csv := filepath.Join(dir, "counties.csv")
	conv("-f", "CSV", csv, counties, "-lco", "GEOMETRY=AS_WKT")
	add("csv_wkt", csv)
	add("csv_table", table)
	// MapInfo, TAB and MIF.
	tab := filepath.Join(dir, "counties.tab")
	conv("-f", "MapInfo File", tab, counties)
	add("mapinfo_tab", tab)
	mif := filepath.Join(dir, "counties.mif")
	conv("-f", "MapInfo File", mif, counties, "-dsco", "FORMAT=MIF")
	add("mapinfo_mif", mif)
	// FlatGeobuf.
	fgb := filepath.Join(dir, "msoa.fgb")
	conv("-f", "FlatGeobuf", fgb, msoa)
	add("flatgeobuf", fgb)
	// A zip of a polygon and a line shapefile.
	two := filepath.Join(dir, "polys_and_lines.zip")
	var parts []any
	for _, src := range []string{counties, lines} {
		stem := strings.TrimSuffix(src, ".shp")
		for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
			b, err := os.ReadFile(stem + ext)
			require.NoError(t, err)
			parts = append(parts, filepath.Base(stem)+ext, b)
		}
	}
	writeZip(t, two, parts...)
	add("zip_polygons_and_lines", two, zipTargets(t, two)...)
	// Curves: a GeoPackage and GML of curve polygons.
	cgpkg := filepath.Join(dir, "curves.gpkg")
	conv("-f", "GPKG", cgpkg, curves, "-a_srs", "EPSG:3857", "-nln", "curves", "-nlt", "MULTISURFACE")
	add("gpkg_curves", cgpkg)
	cgml := filepath.Join(dir, "curves.gml")
	conv("-f", "GML", cgml, cgpkg, "-dsco", "FORMAT=GML3")
	add("gml_curves", cgml)
	return sets
}

func writeZip(t *testing.T, p string, entries ...any) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(entries); i += 2 {
		w, err := zw.Create(entries[i].(string))
		require.NoError(t, err)
		_, err = w.Write(entries[i+1].([]byte))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
}

// zipTargets are what ogrinfo opens to list a zip's layers: each
// shapefile and File Geodatabase in it, wherever its folder.
func zipTargets(t *testing.T, p string) []string {
	t.Helper()
	zr, err := zip.OpenReader(p)
	require.NoError(t, err)
	defer zr.Close()
	var out []string
	seen := map[string]bool{}
	for _, f := range zr.File {
		name := f.Name
		if strings.EqualFold(path.Ext(name), ".shp") {
			out = append(out, "/vsizip/"+p+"/"+name)
		}
		if i := strings.Index(strings.ToLower(name), ".gdb/"); i >= 0 && !seen[name[:i+4]] {
			seen[name[:i+4]] = true
			out = append(out, "/vsizip/"+p+"/"+name[:i+4])
		}
	}
	return out
}

// ogrinfoLayers lists the layers ogrinfo -ro -al sees in targets, each
// with its geometry type and the number of features GDAL reads from it
// (the features ogrinfo lists: its "Feature Count" of a shapefile is the
// .shx's record count, which can be more than GDAL reads, as for a .dbf
// with no records).
func ogrinfoLayers(t *testing.T, targets []string) []gdalLayer {
	t.Helper()
	var out []gdalLayer
	for _, target := range targets {
		args := []string{"-ro", "-al", "-geom=NO"}
		if strings.HasSuffix(strings.ToLower(target), ".gml") {
			args = append(args, "-oo", "WRITE_GFS=NO")
		}
		b, err := exec.Command("ogrinfo", append(args, target)...).CombinedOutput()
		require.NoError(t, err, "ogrinfo %s: %s", target, b)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1) // a CSV's WKT attribute is one long line
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "Layer name: "):
				out = append(out, gdalLayer{name: strings.TrimPrefix(line, "Layer name: ")})
			case len(out) > 0 && strings.HasPrefix(line, "Geometry"):
				_, typ, _ := strings.Cut(line, ": ")
				out[len(out)-1].class = append(out[len(out)-1].class, gdalClass(typ))
			case len(out) > 0 && strings.HasPrefix(line, "Feature Count: "):
				_, err := strconv.ParseInt(strings.TrimPrefix(line, "Feature Count: "), 10, 64)
				require.NoError(t, err, line)
			case len(out) > 0 && strings.HasPrefix(line, "OGRFeature("):
				out[len(out)-1].count++
			}
		}
		require.NoError(t, sc.Err())
	}
	return out
}

// gdalClass is the class of one of ogrinfo's geometry type names.
func gdalClass(typ string) string {
	t := strings.ToLower(typ)
	switch {
	case t == "none":
		return "none"
	case strings.Contains(t, "polygon") || strings.Contains(t, "surface") || strings.Contains(t, "tin") || strings.Contains(t, "triangle"):
		return "polygon"
	case strings.Contains(t, "point"):
		return "point"
	case strings.Contains(t, "line") || strings.Contains(t, "curve") || strings.Contains(t, "circular"):
		return "line"
	}
	return "any" // Unknown (any), Geometry Collection
}

// inspectClass is the class of inspect's geometry type.
func inspectClass(typ string) string {
	switch typ {
	case "Polygon", "MultiPolygon":
		return "polygon"
	case "Point", "MultiPoint":
		return "point"
	case "LineString", "MultiLineString":
		return "line"
	case "None":
		return "none"
	}
	return "any"
}

// inspectLayers are the layers of inspect's report, named as GDAL names
// them (a zip's layer without its folder).
func inspectLayers(r inspect.Report) []gdalLayer {
	var out []gdalLayer
	for _, l := range r.Layers {
		out = append(out, gdalLayer{name: path.Base(l.Name), class: []string{inspectClass(l.GeometryType)}, count: l.Features})
	}
	return out
}

// describedAsGDAL compares inspect's layers with ogrinfo's: the same
// layers, each with the same feature count and a geometry type of the
// same class (any class where GDAL declares none in particular, and an
// inspected layer whose every geometry is null matches whatever GDAL
// declares). It returns the differences.
func describedAsGDAL(got, want []gdalLayer) []string {
	var diffs []string
	byName := map[string]gdalLayer{}
	for _, l := range got {
		byName[l.name] = l
	}
	for _, w := range want {
		g, ok := byName[w.name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("layer %q (%d features) missing", w.name, w.count))
			continue
		}
		delete(byName, w.name)
		if g.count != w.count {
			diffs = append(diffs, fmt.Sprintf("layer %q: %d features, GDAL %d", w.name, g.count, w.count))
		}
		gc := g.class[0]
		match := gc == "none"
		for _, c := range w.class {
			match = match || c == gc || c == "any"
		}
		if !match {
			diffs = append(diffs, fmt.Sprintf("layer %q: geometry %s, GDAL %s", w.name, gc, strings.Join(w.class, "|")))
		}
	}
	var extra []string
	for n := range byName {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	for _, n := range extra {
		diffs = append(diffs, fmt.Sprintf("layer %q not in GDAL's list", n))
	}
	return diffs
}

// TestInspectListsWhatGDALSees: for every file set of the inspect corpus
// (inspectCorpus), `inspect --json` lists the layers `ogrinfo -so -al`
// lists, each with its feature count and a geometry type of the same
// class: non-polygonal layers, tables without geometry, and layers whose
// CRS geoingest refuses included.
func TestInspectListsWhatGDALSees(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDALTool(t, "ogr2ogr")
	requireGDALTool(t, "ogrinfo")
	t.Parallel()
	sets := inspectCorpus(t, t.TempDir())
	same := 0
	var failed []string
	for _, s := range sets {
		code, r, errOut := inspectJSON(t, nil, s.path)
		var diffs []string
		if code > 1 {
			diffs = []string{fmt.Sprintf("inspect exit %d: %s", code, strings.TrimSpace(errOut))}
		} else {
			diffs = describedAsGDAL(inspectLayers(r), ogrinfoLayers(t, s.ogrinfo))
		}
		if len(diffs) == 0 {
			same++
			continue
		}
		failed = append(failed, fmt.Sprintf("%s: %s", s.name, strings.Join(diffs, "; ")))
	}
	t.Logf("inspect describes %d of %d file sets as GDAL does", same, len(sets))
	for _, f := range failed {
		t.Errorf("%s", f)
	}
}
