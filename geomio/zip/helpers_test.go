package zip

import (
	azip "archive/zip"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// The names geomio's callers know these types by, for the tests.
type (
	Layer   = core.Layer
	Feature = core.Feature
	Options = core.Options
	Limits  = core.Limits
)

const FormatGeoJSON = core.FormatGeoJSON

func IsInputError(err error) bool { return core.IsInputError(err) }

// The helpers shared with geomio's root tests (geomio/internal/geomiotest).
var (
	readAll         = geomiotest.ReadAll
	makeSHP         = geomiotest.MakeSHP
	polygonSHP      = geomiotest.PolygonSHP
	polygonOf       = geomiotest.PolygonOf
	featureJSONText = geomiotest.FeatureJSONText
)

const esriWGS84 = geomiotest.ESRIWGS84

const sq = `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}`

var okFeature = featureJSONText(`{"id":1}`, polygonOf(5))

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

// openZip opens a zip as geomio.Open does: with the default limits
// filled in, the layers' CRSs resolved once, and every feature checked
// against the limits.
func openZip(path string, opts Options) (core.Reader, error) {
	opts.Limits = opts.Limits.WithDefaults()
	opts = core.WithCRSCache(opts)
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	return core.WithLimits(r, path, opts.Limits), nil
}

// openAll opens path as openZip does, drains it and closes it.
func openAll(t testing.TB, path string, opts Options) (Layer, []Feature, error) {
	t.Helper()
	r, err := openZip(path, opts)
	if err != nil {
		return Layer{}, nil, err
	}
	defer func() { require.NoError(t, r.Close()) }()
	fs, err := readAll(t, r)
	return r.Layer(), fs, err
}

// makeZip writes a zip of the given entries (in order).
func makeZip(t testing.TB, entries [][2]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "up.zip")
	f, err := os.Create(p)
	require.NoError(t, err)
	zw := azip.NewWriter(f)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return p
}
