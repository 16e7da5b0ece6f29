package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/ingest/inspect"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

const (
	parcelsShp  = "../../testdata/synthetic/parcels_10k.shp"
	bristolBNG  = "../../testdata/corpus/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson"
	mexicoNoPrj = "../../testdata/corpus/mexico_states_noprj/states.shp"
)

func inspectJSON(t *testing.T, env map[string]string, args ...string) (int, inspect.Report, string) {
	t.Helper()
	code, out, errOut := run(t, env, append([]string{"inspect", "--json"}, args...)...)
	var r inspect.Report
	if code <= 1 && out != "" {
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	}
	return code, r, errOut
}

// TestInspectShapefileAndGeoJSON: text and JSON on a shapefile (EPSG:4326
// identified from its .prj) and a GeoJSON whose crs member names
// EPSG:27700, with no database.
func TestInspectShapefileAndGeoJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, nil, "inspect", "--check", parcelsShp)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{`layer "parcels_10k" (shapefile, UTF-8)`, "features  10000", "geometry  MultiPolygon",
		`crs       EPSG:4326 "WGS 84" (identified, 100 %)`, "fields    parcel_id string, owner string", "check     0 invalid, 0 null, 0 non-polygonal",
		"job key   ", "target    parcels", "would land"} {
		require.Contains(t, out, want)
	}

	code, r, errOut := inspectJSON(t, nil, parcelsShp)
	require.Equal(t, 0, code, errOut)
	require.Len(t, r.JobKey, 64)
	require.Len(t, r.Layers, 1)
	l := r.Layers[0]
	require.Equal(t, "parcels_10k", l.Name)
	require.EqualValues(t, 10000, l.Features)
	require.Equal(t, "MultiPolygon", l.GeometryType)
	require.Equal(t, 4326, l.CRS.EPSG)
	require.Equal(t, "identified", l.CRS.Method)
	require.Equal(t, "parcel_id", l.Fields[0].Name)
	require.Len(t, l.Extent, 4)
	require.InDelta(t, 13.088, l.Extent[0], 0.001)
	require.Nil(t, l.Check, "no --check, no counts")
	require.Empty(t, r.Refusal)

	code, r, errOut = inspectJSON(t, nil, bristolBNG)
	require.Equal(t, 0, code, errOut)
	l = r.Layers[0]
	require.Equal(t, "geojson", l.Format)
	require.Equal(t, 27700, l.CRS.EPSG)
	require.Equal(t, "authority", l.CRS.Method)
	require.Equal(t, "OSGB36 / British National Grid", l.CRS.Name)
	require.Greater(t, l.Extent[0], 100000.0, "the extent is in the layer's own CRS")
	require.Contains(t, []string{"objectid", "msoa11cd"}, l.Fields[0].Name)
}

// TestInspectJSONShape: every layer of --json has the keys, the
// crs object all four of them whatever the method (a GeoJSON without a
// crs member is WGS 84 by default: its name is PROJ's, its confidence 0),
// and the extent says which CRS its coordinates are in, in JSON and in
// the text.
func TestInspectJSONShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, name, method, extentCRS string
		epsg                          int
	}{
		{"../../testdata/synthetic/parcels_10k.geojson", "WGS 84", "default", "EPSG:4326", 4326},
		{bristolBNG, "OSGB36 / British National Grid", "authority", "EPSG:27700", 27700},
		{mexicoNoPrj, "", "none", "unknown", 0},
	} {
		code, out, errOut := run(t, nil, "inspect", "--json", tc.path)
		require.LessOrEqual(t, code, 1, errOut)
		var raw struct {
			Layers []map[string]json.RawMessage `json:"layers"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &raw), out)
		require.Len(t, raw.Layers, 1)
		l := raw.Layers[0]
		for _, k := range []string{"name", "geometry_type", "features", "crs", "fields", "extent", "extent_crs"} {
			require.Contains(t, l, k, "%s: layer key %q", tc.path, k)
		}
		var c map[string]any
		require.NoError(t, json.Unmarshal(l["crs"], &c))
		for _, k := range []string{"epsg", "method", "confidence", "name"} {
			require.Contains(t, c, k, "%s: crs key %q in %s", tc.path, k, l["crs"])
		}
		require.Equal(t, tc.name, c["name"], tc.path)
		require.Equal(t, tc.method, c["method"], tc.path)
		require.EqualValues(t, tc.epsg, c["epsg"], tc.path)
		require.JSONEq(t, `"`+tc.extentCRS+`"`, string(l["extent_crs"]), tc.path)

		_, text, _ := run(t, nil, "inspect", tc.path)
		require.Regexp(t, `(?m)^  extent    \S+ \S+, \S+ \S+ \(`+regexp.QuoteMeta(tc.extentCRS)+`\)$`, text)
	}
}

// TestInspectNothingToWrite: an upload with no polygonal feature (a
// points layer, an empty shapefile) is refused as the job refuses it,
// not reported as landing; an empty layer is still listed.
func TestInspectNothingToWrite(t *testing.T) {
	t.Parallel()
	code, r, errOut := inspectJSON(t, nil, "../../testdata/corpus/utf8_emoji_zip/utf.zip")
	require.Equal(t, 1, code, errOut)
	require.Equal(t, "no polygonal features to write for parcels: 0 null or empty, 2 not polygonal (points or lines)", r.Refusal)

	code, r, errOut = inspectJSON(t, nil, "--source-srid", "4326", "../../testdata/corpus/postgis_polygon/Polygon.shp")
	require.Equal(t, 1, code, errOut)
	require.Len(t, r.Layers, 1, "the empty layer is listed")
	require.Equal(t, "Polygon", r.Layers[0].Name)
	require.EqualValues(t, 0, r.Layers[0].Features)
	require.Equal(t, 4326, r.Layers[0].CRS.EPSG)
	require.Contains(t, r.Refusal, "no polygonal features to write for parcels")
	_, out, _ := run(t, nil, "inspect", "--source-srid", "4326", "../../testdata/corpus/postgis_polygon/Polygon.shp")
	require.Contains(t, out, "  geometry  None (no features)")
}

// TestInspectNoCRS: a file with no CRS is refused with what fixes it, and
// --source-srid fixes it (and changes the job key).
func TestInspectNoCRS(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "inspect", mexicoNoPrj)
	require.Equal(t, 1, code)
	require.Contains(t, out, "crs       none: the file names no CRS")
	require.Contains(t, out, "refused: ")
	require.Contains(t, out, "--source-srid")

	code, r, _ := inspectJSON(t, nil, mexicoNoPrj)
	require.Equal(t, 1, code)
	require.Equal(t, "none", r.Layers[0].CRS.Method)
	require.Contains(t, r.Refusal, "--source-srid")

	code, r2, errOut := inspectJSON(t, nil, "--source-srid", "4326", mexicoNoPrj)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "override", r2.Layers[0].CRS.Method)
	require.Equal(t, 4326, r2.Layers[0].CRS.EPSG)
	require.NotEqual(t, r.JobKey, r2.JobKey)
}

// TestInspectCustomCRS: a .prj that no EPSG CRS matches is a custom CRS,
// which geoingest registers.
func TestInspectCustomCRS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shp := testfiles.CopySet(t, "../../testdata/synthetic/parcels_10k", dir, "robinson", ".shp", ".shx", ".dbf")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "robinson.prj"), []byte(`PROJCS["World_Robinson",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Robinson"],PARAMETER["False_Easting",0.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",0.0],UNIT["Meter",1.0]]`), 0o644))
	code, r, errOut := inspectJSON(t, nil, shp)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "custom", r.Layers[0].CRS.Method)
	require.Equal(t, 0, r.Layers[0].CRS.EPSG)
	require.Equal(t, "World_Robinson", r.Layers[0].CRS.Name)
	code, out, _ := run(t, nil, "inspect", shp)
	require.Equal(t, 0, code)
	require.Contains(t, out, `crs       custom "World_Robinson"`)
}

func wkbBytes(t *testing.T, g geom.T) []byte {
	var b bytes.Buffer
	require.NoError(t, wkb.Write(&b, wkb.NDR, g))
	return b.Bytes()
}

// TestInspectGeoParquetCheck: --check counts a GeoParquet file's null,
// non-polygonal and invalid (GEOS) features; the fail policies turn the
// first of them into the refusal.
func TestInspectGeoParquetCheck(t *testing.T) {
	t.Parallel()
	square := geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 1, 1, 0, 1, 0, 0}, []int{10})
	bowtie := geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 1, 1, 0, 0, 1, 0, 0}, []int{10})
	pq := testfiles.GeoParquet(t, filepath.Join(t.TempDir(), "mixed.parquet"), func(yield func(testfiles.GeoParquetRow) bool) {
		for _, g := range [][]byte{wkbBytes(t, square), nil, wkbBytes(t, geom.NewPointFlat(geom.XY, []float64{1, 2})), wkbBytes(t, bowtie)} {
			if !yield(testfiles.GeoParquetRow{Geometry: g, Properties: `{"k":1}`}) {
				return
			}
		}
	}, testfiles.GeoParquetOptions{})
	code, r, errOut := inspectJSON(t, nil, "--check", pq)
	require.Equal(t, 0, code, errOut)
	l := r.Layers[0]
	require.Equal(t, "geoparquet", l.Format)
	require.Equal(t, "Mixed", l.GeometryType)
	require.EqualValues(t, 4, l.Features)
	require.Equal(t, map[string]int64{"MultiPolygon": 2, "None": 1, "Point": 1}, l.GeometryTypes)
	require.Equal(t, inspect.Check{Null: 1, NonPolygonal: 1, Invalid: 1}, *l.Check)
	require.Equal(t, "default", l.CRS.Method)
	require.Equal(t, 4326, l.CRS.EPSG)
	var names []string
	for _, f := range l.Fields {
		names = append(names, f.Name)
	}
	require.Equal(t, []string{"fid", "name", "score", "flag", "day", "properties"}, names)
	require.Equal(t, "null", l.Fields[1].Type)
	require.Equal(t, "object", l.Fields[5].Type)
	require.Equal(t, []float64{0, 0, 1, 2}, l.Extent)

	code, r, _ = inspectJSON(t, nil, "--check", "--invalid", "fail", pq)
	require.Equal(t, 1, code)
	require.Contains(t, r.Refusal, "feature 3: invalid polygon (invalid policy is fail)")
	code, r, _ = inspectJSON(t, nil, "--max-vertices", "4", pq)
	require.Equal(t, 1, code, "the limits are serve's and ingest's")
	require.Contains(t, r.Refusal, "max-vertices")
	code, r, _ = inspectJSON(t, nil, "--wrong-type", "fail", pq)
	require.Equal(t, 1, code)
	require.Contains(t, r.Refusal, "feature 2: Point is not polygonal")
}

// TestInspectMissingGrid: a GeoParquet file in NAD27(CGQ77) / MTM zone 10
// (EPSG:2016) is refused, naming the grid its accurate transformation
// needs and how to install it.
func TestInspectMissingGrid(t *testing.T) {
	t.Parallel()
	pq := testfiles.GeoParquet(t, filepath.Join(t.TempDir(), "quebec.parquet"), func(yield func(testfiles.GeoParquetRow) bool) {
		yield(testfiles.GeoParquetRow{})
	}, testfiles.GeoParquetOptions{CRS: readProjJSON(t, "epsg2016.projjson")})
	code, out, _ := run(t, nil, "inspect", pq)
	require.Equal(t, 1, code)
	for _, want := range []string{"refused: ", "ca_que_mern_cq77na83.tif", "1.5 m", "--file ca_que_mern_cq77na83.tif"} {
		require.Contains(t, out, want)
	}
	code, r, _ := inspectJSON(t, nil, pq)
	require.Equal(t, 1, code)
	require.Len(t, r.Layers, 1)
	require.Equal(t, "quebec", r.Layers[0].Name)
	require.Equal(t, "refused", r.Layers[0].CRS.Method)
	require.Contains(t, r.Layers[0].CRS.Refusal, "missing grid")
	require.Contains(t, r.Layers[0].CRS.Refusal, "ca_que_mern_cq77na83.tif")
	require.NotContains(t, r.Layers[0].CRS.Refusal, "quebec.parquet", "the layer's refusal is the CRS's, the file is named at the top")
}

// TestInspectRoute: the routes (serve's syntax) are matched against --object-key;
// a route's options become the job's parameters, and a key no route takes
// is reported as dropped by the trigger gate.
func TestInspectRoute(t *testing.T) {
	t.Parallel()
	code, r, errOut := inspectJSON(t, nil, "--route", "legacy/=admin_units?source-srid=4326", "--route", "parcels/=parcels",
		"--object-key", "legacy/states.shp", mexicoNoPrj)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "legacy/=admin_units?source-srid=4326", r.Route)
	require.Equal(t, "admin_units", r.Target)
	require.Equal(t, "override", r.Layers[0].CRS.Method)

	code, r, _ = inspectJSON(t, nil, "--route", "parcels/=parcels", "--object-key", "other/states.shp", "--source-srid", "4326", mexicoNoPrj)
	require.Equal(t, 1, code)
	require.Equal(t, "no_route", r.Filtered)
}

// TestInspectS3: inspect s3://bucket/key downloads the object (a
// GeoParquet file) with the S3 object source; the route is serve's
// default for its key and the job key is the one serve would give its
// version.
func TestInspectS3(t *testing.T) {
	t.Parallel()
	srv := testsrv.S3(t)
	srv.NewBucket(t, "uploads", true)
	pq := toGeoParquet(t, bristolBNG, filepath.Join(t.TempDir(), "bristol.parquet"), readProjJSON(t, "epsg27700.projjson"))
	body, err := os.ReadFile(pq)
	require.NoError(t, err)
	put, err := srv.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: ptr("uploads"), Key: ptr("parcels/bristol.parquet"), Body: bytes.NewReader(body)})
	require.NoError(t, err)
	env := testsrv.EnvOf(t, "", srv.URL)
	code, r, errOut := inspectJSON(t, env, "s3://uploads/parcels/bristol.parquet")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "s3://uploads/parcels/bristol.parquet", r.Source)
	require.Equal(t, "parcels/=parcels", r.Route)
	require.Equal(t, *put.VersionId, r.VersionToken)
	require.EqualValues(t, len(body), r.Bytes)
	require.Equal(t, "geoparquet", r.Layers[0].Format)
	require.Equal(t, 27700, r.Layers[0].CRS.EPSG)
	params, err := json.Marshal(r.Params)
	require.NoError(t, err)
	require.Equal(t, "parcels", r.Params["target_table"])
	code, keyOut, errOut := run(t, nil, "key", "--bucket", "uploads", "--key", "parcels/bristol.parquet", "--version", *put.VersionId, "--params", string(params))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, string(bytes.TrimSpace([]byte(keyOut))), r.JobKey, "the job key serve gives this version")

	code, _, errOut = run(t, env, "inspect", "s3://uploads/parcels/none.parquet")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such object")
}

func ptr(s string) *string { return &s }

// TestInspectGeoPackage: a format read with GDAL goes through the same
// path: a two-layer GeoPackage gives two layers, each with its own CRS.
func TestInspectGeoPackage(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDALTool(t, "ogr2ogr")
	t.Parallel()
	gpkg := filepath.Join(t.TempDir(), "two.gpkg")
	for _, args := range [][]string{
		{"-f", "GPKG", gpkg, "../../testdata/corpus/utm18_polygon_a/a_utm.shp", "-nln", "utm"},
		{"-update", "-f", "GPKG", gpkg, bristolBNG, "-nln", "bristol"},
	} {
		out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	code, r, errOut := inspectJSON(t, nil, "--check", gpkg)
	require.Equal(t, 0, code, errOut)
	require.Len(t, r.Layers, 2)
	got := map[string]inspect.Layer{}
	for _, l := range r.Layers {
		got[l.Name] = l
	}
	require.EqualValues(t, 1, got["utm"].Features)
	require.Equal(t, 26918, got["utm"].CRS.EPSG)
	require.EqualValues(t, 72, got["bristol"].Features)
	require.Equal(t, 27700, got["bristol"].CRS.EPSG)
	require.Equal(t, "gpkg", got["bristol"].Format)
	require.Equal(t, inspect.Check{}, *got["bristol"].Check)

	// The layer and geometry field asked for are read as the job would
	// read them: one layer; a field the layers lack is the refusal the
	// job would fail with (inspect read every layer, and said it would
	// land).
	code, r, errOut = inspectJSON(t, nil, "--layer", "bristol", gpkg)
	require.Equal(t, 0, code, errOut)
	require.Len(t, r.Layers, 1)
	require.Equal(t, "bristol", r.Layers[0].Name)
	require.Equal(t, []any{"bristol"}, r.Params["layers"])
	code, r, _ = inspectJSON(t, nil, "--geometry-field", "nope", gpkg)
	require.Equal(t, 1, code)
	require.Contains(t, r.Refusal, `no geometry field "nope" (the layer has "geom")`)
}

// TestInspectREADMEExample: the inspect example of docs/usage.md (moved
// there from the README) is what the
// command prints: every line of its output block is a line of the real
// output.
func TestInspectREADMEExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/usage.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```sh\ngeoingest (inspect [^\n]*)\n```\n```\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "docs/usage.md has an inspect example followed by its output")
	args := strings.Fields(string(m[1]))
	for i, a := range args {
		if strings.HasPrefix(a, "testdata/") {
			args[i] = "../../" + a
		}
	}
	code, out, errOut := run(t, nil, args...)
	require.Equal(t, 0, code, errOut)
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[l] = true
	}
	for _, l := range strings.Split(strings.TrimSpace(string(m[2])), "\n") {
		require.True(t, lines[l], "docs/usage.md line %q is not in the output:\n%s", l, out)
	}
}

// TestInspectS3Versitygw: inspect s3://bucket/key against a real S3
// server, with no database: the job key is the one serve gives that
// version, and what goes wrong is said so a person can act on it: a
// MapInfo .mif or a shapefile whose required part is not in the bucket,
// a missing key, a missing bucket, wrong credentials, none at all.
func TestInspectS3Versitygw(t *testing.T) {
	t.Parallel()
	srv := testsrv.VersitygwIAM(t)
	srv.NewBucket(t, "uploads", true)
	ctx := context.Background()
	putFile := func(key string, body []byte) *s3.PutObjectOutput {
		t.Helper()
		out, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: ptr("uploads"), Key: ptr(key), Body: bytes.NewReader(body)})
		require.NoError(t, err)
		return out
	}
	geojson, err := os.ReadFile(bristolBNG)
	require.NoError(t, err)
	put := putFile("parcels/bristol.geojson", geojson)
	env := testsrv.EnvOf(t, "", srv.URL)
	code, r, errOut := inspectJSON(t, env, "--check", "s3://uploads/parcels/bristol.geojson")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, *put.VersionId, r.VersionToken)
	require.EqualValues(t, 72, r.Layers[0].Features)
	require.Equal(t, "parcels/=parcels", r.Route)
	params, err := json.Marshal(r.Params)
	require.NoError(t, err)
	code, keyOut, errOut := run(t, nil, "key", "--bucket", "uploads", "--key", "parcels/bristol.geojson", "--version", *put.VersionId, "--params", string(params))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, strings.TrimSpace(keyOut), r.JobKey)

	shp := "../../testdata/corpus/six_counties/six_counties"
	for _, ext := range []string{".shp", ".shx", ".prj"} {
		b, err := os.ReadFile(shp + ext)
		require.NoError(t, err)
		putFile("parcels/six"+ext, b)
	}
	putFile("parcels/a.mif", []byte("Version 300\nCharset \"Neutral\"\nDelimiter \",\"\nColumns 1\n  name Char(10)\nData\n"))
	for _, tc := range []struct{ url, want string }{
		{"s3://uploads/parcels/six.shp", "incomplete file set: s3://uploads/parcels/six.shp has no .dbf beside it: upload it beside the main file"},
		{"s3://uploads/parcels/a.mif", "incomplete file set: s3://uploads/parcels/a.mif has no .mid beside it"},
		{"s3://uploads/parcels/none.gpkg", "s3://uploads/parcels/none.gpkg: no such object"},
		{"s3://nobucket/parcels/bristol.geojson", `no such bucket "nobucket"`},
	} {
		code, out, errOut := run(t, env, "inspect", tc.url)
		require.Equal(t, 1, code, out)
		require.Contains(t, errOut, tc.want)
	}

	code, _, errOut = run(t, with(env, "AWS_SECRET_ACCESS_KEY", "wrong"), "inspect", "s3://uploads/parcels/bristol.geojson")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "access denied (HTTP 403)")

	none := with(env, "AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"),
		"AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"), "AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		delete(none, k)
	}
	code, _, errOut = run(t, none, "inspect", "s3://uploads/parcels/bristol.geojson")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
}

// TestInspectRefusedLayerCRS: a GeoPackage one of whose layers has a CRS
// geoingest refuses (EPSG:2016, its grid missing) reports that layer by
// its own name, with its feature count and geometry type (it had none:
// the read stopped at its CRS), beside the layer that would land; the
// refusal names the upload and the layer as the job does (it said
// 'two.gpkg!two.gpkg layer ...', and named the layer after the file).
func TestInspectRefusedLayerCRS(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDALTool(t, "ogr2ogr")
	t.Parallel()
	gpkg := filepath.Join(t.TempDir(), "two.gpkg")
	for _, args := range [][]string{
		{"-f", "GPKG", gpkg, bristolBNG, "-nln", "bristol"},
		{"-update", "-f", "GPKG", gpkg, bristolBNG, "-a_srs", "EPSG:2016", "-nln", "quebec"},
	} {
		out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	code, r, errOut := inspectJSON(t, nil, gpkg)
	require.Equal(t, 1, code, errOut)
	require.Len(t, r.Layers, 2, "every layer, the refused one with its count")
	require.Equal(t, "bristol", r.Layers[0].Name)
	require.Equal(t, "land", r.Layers[0].Action)
	q := r.Layers[1]
	require.Equal(t, "quebec", q.Name)
	require.Equal(t, "refused", q.CRS.Method)
	require.Contains(t, q.CRS.Refusal, "ca_que_mern_cq77na83.tif")
	require.EqualValues(t, 72, q.Features, "a layer whose CRS is refused keeps its count")
	require.Equal(t, "MultiPolygon", q.GeometryType)
	require.Equal(t, "refuse", q.Action)
	abs, err := filepath.Abs(gpkg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(r.Refusal, "file://"+abs+` layer "quebec": unusable CRS: missing grid`), r.Refusal)
}

// TestInspectUnreadLayer: a GeoPackage's point layer beside its polygon
// layer is listed too (as ogrinfo lists it), with its count, CRS and
// checks, and marked as a layer the job does not read; it neither refuses
// the upload nor counts toward it. It was left out of the report.
func TestInspectUnreadLayer(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDALTool(t, "ogr2ogr")
	t.Parallel()
	gpkg := filepath.Join(t.TempDir(), "pp.gpkg")
	for _, args := range [][]string{
		{"-f", "GPKG", gpkg, bristolBNG, "-nln", "polys"},
		{"-update", "-f", "GPKG", gpkg, "/vsizip/../../testdata/corpus/train_stations_boundcrs_zip/train_stations.zip", "-nln", "stations"},
	} {
		out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	code, r, errOut := inspectJSON(t, nil, "--check", gpkg)
	require.Equal(t, 0, code, errOut)
	require.Len(t, r.Layers, 2)
	require.Equal(t, "polys", r.Layers[0].Name)
	require.Empty(t, r.Layers[0].NotRead)
	st := r.Layers[1]
	require.Equal(t, "stations", st.Name)
	require.Contains(t, st.NotRead, "the job does not read it")
	require.EqualValues(t, 361, st.Features)
	require.Equal(t, "Point", st.GeometryType)
	require.Equal(t, 26986, st.CRS.EPSG)
	require.EqualValues(t, 361, st.Check.NonPolygonal)
	require.Empty(t, r.Refusal)

	code, r, errOut = inspectJSON(t, nil, "--layer", "stations", gpkg)
	require.Equal(t, 1, code, errOut)
	require.Len(t, r.Layers, 1, "asked for, the layer is read, and nothing else is listed")
	require.Empty(t, r.Layers[0].NotRead)
	require.Contains(t, r.Refusal, "no polygonal features")
}

// TestInspectTransformationForExtent: the transformation inspect reports,
// and the better one whose grid is missing, are PROJ's for the layer's
// own coordinates (PostGIS picks per coordinate), not for the CRS's whole
// area: NAD27 data in Texas would be better with the US grid, not
// Canada's (which Resolve names for NAD27 as a whole).
func TestInspectTransformationForExtent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, x, y float64) string {
		p := filepath.Join(dir, name)
		ring := fmt.Sprintf("[[%g,%g],[%g,%g],[%g,%g],[%g,%g]]", x, y, x+0.1, y, x+0.1, y+0.1, x, y)
		require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::4267"}},"features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[`+ring+`]}}]}`), 0o644))
		return p
	}
	for _, tc := range []struct {
		file string
		x, y float64
		grid string
	}{
		{"texas.geojson", -99.5, 30.5, "us_noaa_conus.tif"},
		{"quebec.geojson", -74.5, 45.5, "ca_nrc_NA27SCRS.tif"},
	} {
		code, r, errOut := inspectJSON(t, nil, write(tc.file, tc.x, tc.y))
		require.Equal(t, 0, code, errOut)
		c := r.Layers[0].CRS
		require.Equal(t, 4267, c.EPSG)
		if c.Better == nil {
			t.Skipf("%s: no better transformation: the grids are installed here (%s)", tc.file, c.Transformation)
		}
		var grids []string
		for _, g := range c.Better.Grids {
			grids = append(grids, g.ShortName)
		}
		require.Contains(t, grids, tc.grid, "%s: %s", tc.file, c.Better)
		require.Contains(t, c.BetterFix, tc.grid)
	}
}
