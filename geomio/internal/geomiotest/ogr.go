package geomiotest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// RequireOGR2OGR skips the test when GDAL's ogr2ogr (gdal-bin, a test-only
// dependency) is missing, except in CI, where scripts/setup.sh --test
// installs it.
func RequireOGR2OGR(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogr2ogr not found: scripts/setup.sh --test installs gdal-bin")
		}
		t.Skip("ogr2ogr not found: apt-get install gdal-bin to run this test")
	}
}

// OGR2OGR runs ogr2ogr with args, failing the test on error.
func OGR2OGR(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ogr2ogr", args...).CombinedOutput()
	require.NoError(t, err, "ogr2ogr %s: %s", strings.Join(args, " "), out)
}

// ZipDir zips base (a file or folder under dir) into out.
func ZipDir(t *testing.T, out, dir string, base ...string) {
	t.Helper()
	cmd := exec.Command("zip", append([]string{"-qr", out}, base...)...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "zip: %s", b)
}

// ReadOGR reads every feature of path as open (geomio.Open) opens it,
// returning them (geometries and properties copied) and the layers seen,
// in order.
func ReadOGR(t *testing.T, open func(string, core.Options) (core.Reader, error), path string, opts core.Options) ([]core.Feature, []core.Layer, error) {
	t.Helper()
	r, err := open(path, opts)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var fs []core.Feature
	var ls []core.Layer
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
