// Package ingesttest holds the conformance suites of ingest's seams: every
// implementation of ingest.ObjectSource, ingest.FileSource and ingest.Store
// runs the suite of its seam from its own tests, against the real thing
// (an S3 server, the file system, PostGIS). A suite checks what the
// interface's comment promises, nothing of one implementation's own.
package ingesttest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// ObjectHarness makes one ObjectSource under test.
type ObjectHarness struct {
	// Open returns a source on a fresh, empty bucket, and its name.
	Open func(t *testing.T) (src ingest.ObjectSource, bucket string)
	// Put stores body under key in bucket and returns the created event
	// the store would announce it with.
	Put func(t *testing.T, bucket, key string, body []byte) ingest.Event
	// Message encodes evs as the store's notification (the body that
	// Events decodes).
	Message func(t *testing.T, evs ...ingest.Event) []byte
	// Versioned says whether the bucket keeps old versions readable.
	Versioned bool
	// OneEventPerMessage says that the store's notification carries one
	// event (Cloud Storage's, Event Grid's): Message is then given one
	// event at a time.
	OneEventPerMessage bool
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// ObjectSourceSuite is the conformance suite of ingest.ObjectSource.
func ObjectSourceSuite(t *testing.T, h ObjectHarness) {
	ctx := context.Background()
	t.Run("EventsDecodesItsMessages", func(t *testing.T) {
		src, bucket := h.Open(t)
		a := h.Put(t, bucket, "parcels/a b+c é.geojson", []byte(`{"a":1}`))
		b := h.Put(t, bucket, "admin/b.geojson", []byte(`{"b":2}`))
		var evs []ingest.Event
		if h.OneEventPerMessage {
			for _, ev := range []ingest.Event{a, b} {
				got, err := src.Events(h.Message(t, ev))
				require.NoError(t, err)
				require.Len(t, got, 1)
				evs = append(evs, got...)
			}
		} else {
			var err error
			evs, err = src.Events(h.Message(t, a, b))
			require.NoError(t, err)
		}
		require.Len(t, evs, 2)
		for i, want := range []ingest.Event{a, b} {
			require.True(t, evs[i].Created(), "%v", evs[i])
			require.Equal(t, want.Bucket, evs[i].Bucket)
			require.Equal(t, want.Key, evs[i].Key, "the key is decoded")
			require.Equal(t, want.VersionToken(), evs[i].VersionToken())
			require.Equal(t, want.Size, evs[i].Size)
		}
	})
	t.Run("EventsRefusesGarbagePermanently", func(t *testing.T) {
		src, _ := h.Open(t)
		for _, body := range []string{"", "not json", `{"Records":[{}]}`, `[]`, `{"unrelated":true}`} {
			_, err := src.Events([]byte(body))
			require.Error(t, err, body)
			require.Equal(t, ingest.Permanent, ingest.KindOf(err), body)
		}
	})
	t.Run("ResolveAndFetchTheVersion", func(t *testing.T) {
		src, bucket := h.Open(t)
		body := []byte(`{"type":"FeatureCollection","features":[]}`)
		ev := h.Put(t, bucket, "parcels/x.geojson", body)
		ev.Time, ev.Sequencer = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC), "0055AED6DCD90281E5"
		s, f, err := src.Resolve(ctx, ev, false)
		require.NoError(t, err)
		require.Equal(t, bucket, s.Bucket)
		require.Equal(t, "parcels/x.geojson", s.Key)
		require.Equal(t, ev.VersionToken(), s.VersionToken)
		require.Equal(t, ev.Order(), s.Order)
		dir := t.TempDir()
		got, err := f.Fetch(ctx, dir)
		require.NoError(t, err)
		require.Equal(t, sha(body), got.ContentHash)
		require.EqualValues(t, len(body), got.Size, "the size fetched")
		require.Equal(t, dir, filepath.Dir(got.Path), "fetched into dir")
		b, err := os.ReadFile(got.Path)
		require.NoError(t, err)
		require.Equal(t, body, b)
	})
	t.Run("AnOverwrittenVersionIsNeverReadAsTheNewOne", func(t *testing.T) {
		src, bucket := h.Open(t)
		old := h.Put(t, bucket, "parcels/y.geojson", []byte(`{"v":1}`))
		_, f, err := src.Resolve(ctx, old, false)
		require.NoError(t, err)
		h.Put(t, bucket, "parcels/y.geojson", []byte(`{"v":2,"changed":true}`))
		got, err := f.Fetch(ctx, t.TempDir())
		if h.Versioned {
			require.NoError(t, err, "the old version is still readable")
			require.Equal(t, sha([]byte(`{"v":1}`)), got.ContentHash)
			return
		}
		require.True(t, errors.Is(err, ingest.ErrObjectChanged), "%v", err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	})
	t.Run("AMissingObjectIsPermanent", func(t *testing.T) {
		src, bucket := h.Open(t)
		ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: "parcels/gone.geojson", RawKey: "parcels/gone.geojson",
			Size: 3, ETag: "0123456789abcdef0123456789abcdef"}
		_, f, err := src.Resolve(ctx, ev, false)
		if err == nil {
			_, err = f.Fetch(ctx, t.TempDir())
		}
		require.Error(t, err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
	})
	t.Run("AnEventWithoutVersionIsPermanent", func(t *testing.T) {
		src, bucket := h.Open(t)
		_, _, err := src.Resolve(ctx, ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: "parcels/z.geojson", Size: 3}, false)
		require.Error(t, err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	})
	t.Run("AShapefileSetIsOneVersion", func(t *testing.T) {
		src, bucket := h.Open(t)
		parts := shapefileParts(t)
		shp := h.Put(t, bucket, "parcels/set.shp", parts[".shp"])
		h.Put(t, bucket, "parcels/set.shx", parts[".shx"])

		s1, f, err := src.Resolve(ctx, shp, false)
		require.NoError(t, err)
		_, err = f.Fetch(ctx, t.TempDir())
		require.True(t, errors.Is(err, ingest.ErrIncompleteShapefile), "%v", err)
		require.Equal(t, ingest.Transient, ingest.KindOf(err), "the .dbf may be on its way")
		require.Contains(t, err.Error(), ".dbf")
		_, f, err = src.Resolve(ctx, shp, true)
		require.NoError(t, err)
		_, err = f.Fetch(ctx, t.TempDir())
		require.True(t, errors.Is(err, ingest.ErrIncompleteShapefile), "%v", err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "final: patience exhausted")

		h.Put(t, bucket, "parcels/set.dbf", parts[".dbf"])
		s2, f, err := src.Resolve(ctx, shp, false)
		require.NoError(t, err)
		require.NotEqual(t, s1.VersionToken, s2.VersionToken, "the token covers the sidecars")
		dir := t.TempDir()
		got, err := f.Fetch(ctx, dir)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(dir, "set.shp"), got.Path)
		require.EqualValues(t, len(parts[".shp"])+len(parts[".shx"])+len(parts[".dbf"]), got.Size, "the size of every part")
		for _, ext := range []string{".shp", ".shx", ".dbf"} {
			b, err := os.ReadFile(filepath.Join(dir, "set"+ext))
			require.NoError(t, err)
			require.Equal(t, parts[ext], b, ext)
		}
		again, _, err := src.Resolve(ctx, shp, false)
		require.NoError(t, err)
		require.Equal(t, s2.VersionToken, again.VersionToken, "the same set, the same token")
		h.Put(t, bucket, "parcels/set.prj", parts[".prj"])
		s3, _, err := src.Resolve(ctx, shp, false)
		require.NoError(t, err)
		require.NotEqual(t, s2.VersionToken, s3.VersionToken, "a late sidecar is a new version")
	})
}

// shapefileParts reads the parts of a small shapefile set of the
// repository's test data.
func shapefileParts(t *testing.T) map[string][]byte {
	t.Helper()
	parts := map[string][]byte{}
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		b, err := os.ReadFile(filepath.Join(testdata(t), "corpus", "six_counties", "six_counties"+ext))
		require.NoError(t, err)
		parts[ext] = b
	}
	return parts
}

// testdata finds the repository's testdata directory from the test's
// working directory (its package directory).
func testdata(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if st, err := os.Stat(filepath.Join(dir, "testdata", "corpus")); err == nil && st.IsDir() {
			return filepath.Join(dir, "testdata")
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no testdata/corpus above the test's directory")
		dir = parent
	}
}

// FileSourceSuite is the conformance suite of ingest.FileSource.
func FileSourceSuite(t *testing.T, fs ingest.FileSource) {
	ctx := context.Background()
	write := func(t *testing.T, p string, b []byte) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	t.Run("SizeAndSource", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "sub", "..", "a.geojson")
		body := []byte(`{"type":"FeatureCollection","features":[]}`)
		write(t, p, body)
		mtime := time.Date(2024, 3, 1, 12, 0, 0, 123456789, time.UTC)
		require.NoError(t, os.Chtimes(p, mtime, mtime))

		n, err := fs.Size(p)
		require.NoError(t, err)
		require.EqualValues(t, len(body), n)
		require.Nil(t, fs.Missing(p), "not a shapefile")

		s, f, err := fs.Source(p)
		require.NoError(t, err)
		require.Equal(t, ingest.LocalBucket, s.Bucket)
		require.Equal(t, filepath.Join(dir, "a.geojson"), s.Key, "the cleaned absolute path")
		require.Equal(t, sha(body), s.VersionToken)
		require.Equal(t, ingest.OrderFromTime(mtime), s.Order)
		out := t.TempDir()
		got, err := f.Fetch(ctx, out)
		require.NoError(t, err)
		require.Equal(t, sha(body), got.ContentHash)
		require.EqualValues(t, len(body), got.Size, "the size fetched")
		require.Equal(t, out, filepath.Dir(got.Path), "a copy in the job's directory")
		b, err := os.ReadFile(got.Path)
		require.NoError(t, err)
		require.Equal(t, body, b)
	})
	t.Run("AChangedFileIsNotFetched", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "b.geojson")
		write(t, p, []byte(`{"v":1}`))
		_, f, err := fs.Source(p)
		require.NoError(t, err)
		write(t, p, []byte(`{"v":2}`))
		_, err = f.Fetch(ctx, t.TempDir())
		require.Error(t, err)
		require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
	})
	t.Run("AMissingFile", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "gone.geojson")
		_, err := fs.Size(p)
		require.Error(t, err)
		_, _, err = fs.Source(p)
		require.Error(t, err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
	})
	t.Run("AShapefileSetIsOneVersion", func(t *testing.T) {
		dir := t.TempDir()
		parts := shapefileParts(t)
		shp := filepath.Join(dir, "set.shp")
		write(t, shp, parts[".shp"])
		write(t, filepath.Join(dir, "set.shx"), parts[".shx"])
		require.Equal(t, []string{".dbf"}, fs.Missing(shp))
		write(t, filepath.Join(dir, "SET.DBF"), parts[".dbf"])
		require.Nil(t, fs.Missing(shp), "sidecars match case-insensitively")

		s1, f, err := fs.Source(shp)
		require.NoError(t, err)
		require.NotEqual(t, sha(parts[".shp"]), s1.VersionToken, "the token covers the sidecars")
		out := t.TempDir()
		got, err := f.Fetch(ctx, out)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(out, "set.shp"), got.Path)
		require.Equal(t, s1.VersionToken, got.ContentHash)
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		require.Len(t, entries, 3, "the .shp and its sidecars, side by side")

		again, _, err := fs.Source(shp)
		require.NoError(t, err)
		require.Equal(t, s1.VersionToken, again.VersionToken)
		write(t, filepath.Join(dir, "set.prj"), parts[".prj"])
		s2, _, err := fs.Source(shp)
		require.NoError(t, err)
		require.NotEqual(t, s1.VersionToken, s2.VersionToken, "a late sidecar is a new version")
	})
}
