package zip

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/shapefile"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

func TestZip(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"ID", 'N', 4, 0}}
	shp2 := string(makeSHP([][2]float64{{1, 1}, {2, 2}}))
	dbf2 := string(makeDBF(0, cols, [][]string{{"1"}, {"2"}}))
	shp1 := string(makeSHP([][2]float64{{3, 3}}))
	dbf1 := string(makeDBF(0, cols, [][]string{{"3"}}))
	prj := esriWGS84

	t.Run("several layers in lexical order", func(t *testing.T) {
		t.Parallel()
		p := makeZip(t, [][2]string{
			{"b/Second.SHP", shp1}, {"b/Second.DBF", dbf1}, {"b/second.Prj", `PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936",DATUM["D_OSGB_1936",SPHEROID["Airy_1830",6377563.396,299.3249646]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",400000.0],PARAMETER["False_Northing",-100000.0],PARAMETER["Central_Meridian",-2.0],PARAMETER["Scale_Factor",0.9996012717],PARAMETER["Latitude_Of_Origin",49.0],UNIT["Meter",1.0]]`},
			{"__MACOSX/a/._First.shp", "junk"}, {"a/First.shp", shp2}, {"a/First.dbf", dbf2}, {"a/First.prj", prj},
			{"a/First.sbn", "ignored"}, {"a/First.shp.xml", "<x/>"},
		})
		r, err := openZip(p, Options{})
		require.NoError(t, err)
		var layers []string
		var srids []int
		var idx []int64
		for r.Next() {
			f := r.Feature()
			layers, srids, idx = append(layers, f.Layer), append(srids, r.Layer().SRID), append(idx, f.Index)
		}
		require.NoError(t, r.Err())
		require.Equal(t, []string{"a/First", "a/First", "b/Second"}, layers)
		require.Equal(t, []int{4326, 4326, 27700}, srids)
		require.Equal(t, []int64{0, 1, 2}, idx)
		// Close removes the extraction directory.
		tmp := filepath.Dir(filepath.Dir(r.(*core.LimitedReader).Reader.(*core.MultiReader).Cur.(*shapefile.ShpReader).Files[0].Name()))
		require.DirExists(t, tmp)
		require.NoError(t, r.Close())
		require.NoDirExists(t, tmp)
	})
	for _, tc := range []struct {
		name    string
		entries [][2]string
		opts    Options
		wantErr string
	}{
		{"zip slip", [][2]string{{"../evil.shp", shp1}}, Options{}, "parent directory"},
		{"absolute", [][2]string{{"/etc/evil.shp", shp1}}, Options{}, "absolute path"},
		{"too many entries", [][2]string{{"a.shp", shp1}, {"a.dbf", dbf1}, {"a.txt", ""}}, Options{Limits: Limits{MaxEntries: 2}}, "zip has 3 entries: more than 2 entries, over the limit (raise it with --max-zip-entries"},
		{"total size", [][2]string{{"a.shp", shp1}, {"a.dbf", dbf1}}, Options{Limits: Limits{MaxUncompressedBytes: 150}}, "expands to more than 150 bytes"},
		{"ratio", [][2]string{{"a.shp", shp1}, {"a.dbf", strings.Repeat(" ", 3<<20)}}, Options{}, "compression ratio above 200"},
		// Each entry is under the 1 MiB floor of the per-entry ratio check;
		// together they are a bomb: the whole archive's ratio is checked.
		{"ratio of small entries", manySmallBombEntries(shp1, dbf1, 300), Options{}, "zip expands to more than 200 times its size"},
		{"no shapefile", [][2]string{{"readme.txt", "hi"}}, Options{}, "unsupported format"},
		{"missing dbf", [][2]string{{"x/a.shp", shp1}}, Options{}, "missing .dbf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := makeZip(t, tc.entries)
			_, _, err := openAll(t, p, tc.opts)
			require.Error(t, err)
			require.True(t, IsInputError(err), "%T %v", err, err)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// manySmallBombEntries is a shapefile set plus n entries of just under
// 1 MiB of zeros each (about 1 KiB deflated).
func manySmallBombEntries(shp, dbf string, n int) [][2]string {
	es := [][2]string{{"a.shp", shp}, {"a.dbf", dbf}}
	zeros := strings.Repeat("\x00", 1<<20-1)
	for i := 0; i < n; i++ {
		es = append(es, [2]string{fmt.Sprintf("pad/p%03d.dbf", i), zeros})
	}
	return es
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
	err := CheckZipDirectory(zp, Limits{MaxEntries: 10})
	require.EqualError(t, err, zp+": zip has 11 entries: more than 10 entries, over the limit (raise it with --max-zip-entries or GEOINGEST_MAX_ZIP_ENTRIES)")
	require.NoError(t, CheckZipDirectory(zp, Limits{MaxEntries: 11}))
	err = CheckZipDirectory(zp, Limits{MaxEntries: 0})
	require.Error(t, err, "no entries allowed")
}

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
