package fileset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGMLSetRules: a GML file (.gml, .xml, gzipped) is the main file of a
// set whose parts, its .xsd and .gfs, are optional: they never start a job
// (IsSidecar), are found beside it under its name without .gz, and a lone
// GML file misses nothing, so it never waits.
func TestGMLSetRules(t *testing.T) {
	for name, stem := range map[string]string{"a/b.gml": "a/b", "a/B.GML.GZ": "a/B", "b.xml.gz": "b", "b.xml": "b", "b.xsd": "b", "b.gfs": "b", "b.shp": "b"} {
		got, ok := SetStem(name)
		require.True(t, ok, name)
		require.Equal(t, stem, got, name)
	}
	for _, name := range []string{"b.gz", "b.geojson", "b.gpkg"} {
		_, ok := SetStem(name)
		require.False(t, ok, name)
	}
	for _, name := range []string{"b.xsd", "b.GFS"} {
		require.True(t, IsSidecar(name), name)
	}
	for _, name := range []string{"b.gml", "b.gml.gz", "b.xml"} {
		require.False(t, IsSidecar(name), name)
		require.True(t, IsFileSet(name), name)
	}
	require.False(t, IsFileSet("b.gz"))

	dir := t.TempDir()
	for _, n := range []string{"two.gml.gz", "TWO.xsd", "two.gfs", "two.dbf", "other.xsd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	set, err := FindShapefileSet(filepath.Join(dir, "two.gml.gz"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "two.gml.gz"), filepath.Join(dir, "TWO.xsd"), filepath.Join(dir, "two.gfs")}, set.Paths())
	require.Empty(t, set.Missing())
	lone, err := FindShapefileSet(filepath.Join(dir, "other.xml"))
	require.NoError(t, err)
	require.Empty(t, lone.Missing(), "a GML file alone waits for nothing")
}
