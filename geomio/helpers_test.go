package geomio

import (
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// The helpers geomio's root tests share with the per-format packages'
// (geomio/internal/geomiotest).
var (
	readAll         = geomiotest.ReadAll
	cloneFeature    = geomiotest.CloneFeature
	makeSHP         = geomiotest.MakeSHP
	polygonSHP      = geomiotest.PolygonSHP
	polygonOf       = geomiotest.PolygonOf
	featureJSONText = geomiotest.FeatureJSONText
)

// dbfCol is a column of makeDBF's table.
type dbfCol struct {
	name     string
	typ      byte
	length   int
	decimals int
}

// makeDBF is geomiotest.MakeDBF with cols as dbfCol.
func makeDBF(ldid byte, cols []dbfCol, recs [][]string) []byte {
	cs := make([]geomiotest.DBFCol, len(cols))
	for i, c := range cols {
		cs[i] = geomiotest.DBFCol{Name: c.name, Type: c.typ, Length: c.length, Decimals: c.decimals}
	}
	return geomiotest.MakeDBF(ldid, cs, recs)
}

const esriWGS84 = geomiotest.ESRIWGS84

// openAll opens path, drains it and closes it.
func openAll(t testing.TB, path string, opts Options) (Layer, []Feature, error) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		return Layer{}, nil, err
	}
	defer func() { require.NoError(t, r.Close()) }()
	fs, err := readAll(t, r)
	return r.Layer(), fs, err
}

const sq = `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}`

// The GDAL helpers the root's comparisons share with geomio/ogr's tests.
var (
	requireOGR2OGR = geomiotest.RequireOGR2OGR
	ogr2ogr        = geomiotest.OGR2OGR
	zipDir         = geomiotest.ZipDir
)

// readOGR reads every feature of path as Open opens it
// (geomiotest.ReadOGR).
func readOGR(t *testing.T, path string, opts Options) ([]Feature, []Layer, error) {
	t.Helper()
	return geomiotest.ReadOGR(t, Open, path, opts)
}

const (
	srcCounties = corpusDir + "/six_counties/six_counties.shp"                                     // EPSG:4326, 6 polygons
	srcBristol  = corpusDir + "/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson" // EPSG:27700
)
