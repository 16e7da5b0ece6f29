//go:build cgo && !geoingest_nogdal

package ogr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGeomTypeAsGDAL: Polygonal and Mixed, computed without GDAL in the
// parent, answer as GDAL's OGR_GT_IsSubClassOf does, for every 2D type.
func TestGeomTypeAsGDAL(t *testing.T) {
	if err := initGDAL(); err != nil {
		t.Skip(err)
	}
	for ty := GeomType(0); ty <= 17; ty++ {
		require.Equal(t, cPolygonal(ty), ty.Polygonal(), "type %d", ty)
	}
	require.Equal(t, cPolygonal(100), GeomType(100).Polygonal())
}

// TestChildSandboxed: the child that reads a file reports the sandbox it
// applied; on this project's machines (Linux 6.x) both seccomp and
// Landlock.
func TestChildSandboxed(t *testing.T) {
	if err := initGDAL(); err != nil {
		t.Skip(err)
	}
	p := filepath.Join(t.TempDir(), "a.csv")
	require.NoError(t, os.WriteFile(p, []byte("id,WKT\n1,\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644))
	ds, err := Open(p, []string{"CSV"}, nil, Contain{Read: []string{filepath.Dir(p)}, Deadline: time.Now().Add(time.Minute), Timeout: time.Minute})
	require.NoError(t, err)
	defer ds.Close()
	require.Contains(t, ds.Protection, "seccomp")
	if landlockABI() > 0 {
		require.True(t, strings.Contains(ds.Protection, "landlock="), ds.Protection)
	}
	l := ds.Layer(0)
	require.NoError(t, l.Start(0, false))
	ok, err := l.Next()
	require.NoError(t, err)
	require.True(t, ok)
	wkb, _, err := l.WKB()
	require.NoError(t, err)
	require.NotEmpty(t, wkb)
	require.Equal(t, "1", string(l.Field(0).Str))
	ok, err = l.Next()
	require.NoError(t, err)
	require.False(t, ok)
}
