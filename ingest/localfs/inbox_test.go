package localfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestInboxEvents: a delivery is the created event of the file, keyed by
// its path relative to the inbox; a vanished file has size -1; a body
// outside the inbox is refused.
func TestInboxEvents(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "parcels", "a.geojson")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	box := Inbox{Dir: dir}

	evs, err := box.Events([]byte(p))
	require.NoError(t, err)
	require.Equal(t, []ingest.Event{{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket, Key: "parcels/a.geojson", RawKey: "parcels/a.geojson", Size: 42}}, evs)
	src, _, err := box.Resolve(context.Background(), evs[0], false)
	require.NoError(t, err)
	require.Equal(t, p, src.Key, "the job's key is the file's absolute path")

	evs, err = box.Events([]byte(filepath.Join(dir, "gone.geojson")))
	require.NoError(t, err)
	require.EqualValues(t, -1, evs[0].Size)
	r := ingest.NewRouter([]ingest.Route{{Target: "parcels"}}, nil)
	_, reason, ok := r.Route(evs[0])
	require.False(t, ok)
	require.Equal(t, ingest.FilterVanished, reason)

	for _, body := range []string{filepath.Join(filepath.Dir(dir), "x.geojson"), "relative.geojson", dir} {
		_, err = box.Events([]byte(body))
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%q: %v", body, err)
	}
}

// TestInboxIncompleteShapefile: a .shp without its .dbf fails at Resolve,
// Transient until final.
func TestInboxIncompleteShapefile(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".shp", ".shx"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "half"+ext), []byte("x"), 0o644))
	}
	box := Inbox{Dir: dir}
	evs, err := box.Events([]byte(filepath.Join(dir, "half.shp")))
	require.NoError(t, err)
	_, _, err = box.Resolve(context.Background(), evs[0], false)
	require.True(t, errors.Is(err, ingest.ErrIncompleteShapefile), "%v", err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err))
	require.ErrorContains(t, err, "has no .dbf beside it")
	_, _, err = box.Resolve(context.Background(), evs[0], true)
	require.True(t, errors.Is(err, ingest.ErrIncompleteShapefile), "%v", err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	require.ErrorContains(t, err, "(gave up waiting)")
}

// TestInboxGMLSet: a GML file in the inbox (gzipped too) is one set with
// the .xsd or .gfs beside it (ShapefileSetOf, which the inbox's settling
// groups by), resolves at once when alone, and its key covers the schema.
func TestInboxGMLSet(t *testing.T) {
	for _, name := range []string{"p/Two.gml.gz", "p/two.XSD", "p/two.gfs", "p/two.gml"} {
		require.Equal(t, "p/two", ShapefileSetOf(name), name)
	}
	require.Equal(t, "", ShapefileSetOf("p/two.gz"))
	dir := t.TempDir()
	gml := filepath.Join(dir, "two.gml.gz")
	require.NoError(t, os.WriteFile(gml, []byte("gml"), 0o644))
	box := Inbox{Dir: dir}
	evs, err := box.Events([]byte(gml))
	require.NoError(t, err)
	alone, f, err := box.Resolve(context.Background(), evs[0], false)
	require.NoError(t, err, "a lone GML file waits for nothing")
	got, err := f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.Equal(t, "two.gml.gz", filepath.Base(got.Path))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "two.xsd"), []byte("<schema/>"), 0o644))
	with, f, err := box.Resolve(context.Background(), evs[0], false)
	require.NoError(t, err)
	require.NotEqual(t, alone.VersionToken, with.VersionToken, "the key covers the schema")
	tmp := t.TempDir()
	_, err = f.Fetch(context.Background(), tmp)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(tmp, "two.xsd"))
	require.NoError(t, err)
	require.Equal(t, "<schema/>", string(b))
}
