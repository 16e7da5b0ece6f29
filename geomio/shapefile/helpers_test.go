package shapefile

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// The names geomio's callers know these types by, for the tests.
type (
	Layer   = core.Layer
	Feature = core.Feature
	Reader  = core.Reader
	Options = core.Options
	SkipSet = core.SkipSet
	Limits  = core.Limits
	Error   = core.Error
)

const CodeEncoding = core.CodeEncoding

func IsInputError(err error) bool { return core.IsInputError(err) }
func IsLimitError(err error) bool { return core.IsLimitError(err) }

const corpusDir = "../../testdata/corpus"

// The helpers shared with geomio's root tests (geomio/internal/geomiotest).
var (
	readAll     = geomiotest.ReadAll
	findFeature = geomiotest.FindFeature
	makeSHP     = geomiotest.MakeSHP
	polygonSHP  = geomiotest.PolygonSHP
	writeSet    = geomiotest.WriteSet
)

const esriWGS84 = geomiotest.ESRIWGS84

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

// openAll opens path as geomio.Open opens a .shp: with the default
// limits filled in, the layers' CRSs resolved once, and every feature
// checked against the limits; then drains and closes it. A corpus .zip
// of one set is unpacked first (geomio/zip reads zips; it imports this
// package).
func openAll(t testing.TB, path string, opts Options) (Layer, []Feature, error) {
	t.Helper()
	if strings.EqualFold(filepath.Ext(path), ".zip") {
		path = unzipSet(t, path)
	}
	opts.Limits = opts.Limits.WithDefaults()
	opts = core.WithCRSCache(opts)
	r, err := Open(path, filepath.Base(path), opts)
	if err != nil {
		return Layer{}, nil, err
	}
	r = core.WithLimits(r, path, opts.Limits)
	defer func() { require.NoError(t, r.Close()) }()
	fs, err := readAll(t, r)
	return r.Layer(), fs, err
}

// unzipSet unpacks the zip at path into a temporary folder and returns
// the path of the one .shp it holds.
func unzipSet(t testing.TB, path string) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	dir, shp := t.TempDir(), ""
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || strings.HasPrefix(f.Name, "__MACOSX/") {
			continue
		}
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		out := filepath.Join(dir, filepath.Base(f.Name))
		require.NoError(t, os.WriteFile(out, b, 0o644))
		if strings.EqualFold(filepath.Ext(out), ".shp") {
			require.Empty(t, shp, "%s: one set", path)
			shp = out
		}
	}
	require.NotEmpty(t, shp, "%s: no .shp", path)
	return shp
}
