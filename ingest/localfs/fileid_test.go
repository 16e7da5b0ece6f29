package localfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// settleClock makes Source judge racy times an hour from now, as if the
// files a test has just written had settled long before: a test cannot
// set a file's ctime back.
func settleClock(t *testing.T) {
	t.Helper()
	now = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { now = time.Now })
}

func requireFileID(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("fstat identity is read on Linux only; elsewhere every fetch hashes again")
	}
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestFetchTrustsASettledFile: a file whose times are older than the
// racy window is copied without a second hash, and its copy is the
// version Source hashed.
func TestFetchTrustsASettledFile(t *testing.T) {
	requireFileID(t)
	settleClock(t)
	p := filepath.Join(t.TempDir(), "a.geojson")
	body := []byte(`{"type":"FeatureCollection","features":[]}`)
	require.NoError(t, os.WriteFile(p, body, 0o644))
	src, f, err := Source(p)
	require.NoError(t, err)
	l := f.(*localFetcher)
	require.True(t, l.parts[0].settled)
	got, err := f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.False(t, l.rehashed[0], "a settled, unchanged file is not hashed again")
	require.Equal(t, sha(body), src.VersionToken)
	require.Equal(t, src.VersionToken, got.ContentHash)
	require.EqualValues(t, len(body), got.Size)
	b, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	require.Equal(t, body, b)
}

// TestFetchRehashesARacyFile: a file written within the racy window of
// Source is hashed again at fetch, so a write in the same timestamp tick,
// which leaves its fstat identity as Source saw it, is still caught.
func TestFetchRehashesARacyFile(t *testing.T) {
	requireFileID(t)
	p := filepath.Join(t.TempDir(), "b.geojson")
	require.NoError(t, os.WriteFile(p, []byte(`{"v":1}`), 0o644))
	_, f, err := Source(p)
	require.NoError(t, err)
	l := f.(*localFetcher)
	require.False(t, l.parts[0].settled, "just written: racy")
	_, err = f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err, "unchanged")
	require.True(t, l.rehashed[0], "a racy file is hashed again")

	// A write in the same tick: the bytes change, the identity does not
	// (set here as fstat would have given it).
	require.NoError(t, os.WriteFile(p, []byte(`{"v":2}`), 0o644))
	in, err := os.Open(p)
	require.NoError(t, err)
	id, ok, err := statID(in)
	require.NoError(t, in.Close())
	require.NoError(t, err)
	require.True(t, ok)
	l.parts[0].id = id
	_, err = f.Fetch(context.Background(), t.TempDir())
	require.Error(t, err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
	require.Contains(t, err.Error(), "file changed while being ingested")
	require.True(t, l.rehashed[0])

	// What the racy rule is for: had the part been taken as settled, the
	// identity alone would have let the new bytes through.
	l.parts[0].settled = true
	got, err := f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.False(t, l.rehashed[0])
	b, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	require.Equal(t, `{"v":2}`, string(b))
}

// TestFetchCatchesARewriteThatKeepsSizeAndMtime: a settled file rewritten
// in place with bytes of the same size and its modification time put
// back (touch -d) keeps its device, inode, size and mtime; its ctime
// moves, so the fetch hashes it again and refuses it.
func TestFetchCatchesARewriteThatKeepsSizeAndMtime(t *testing.T) {
	requireFileID(t)
	settleClock(t)
	p := filepath.Join(t.TempDir(), "c.geojson")
	require.NoError(t, os.WriteFile(p, []byte(`{"v":1}`), 0o644))
	mtime := time.Date(2024, 3, 1, 12, 0, 0, 123456789, time.UTC)
	require.NoError(t, os.Chtimes(p, mtime, mtime))
	_, f, err := Source(p)
	require.NoError(t, err)
	l := f.(*localFetcher)
	require.True(t, l.parts[0].settled)
	before := l.parts[0].id

	time.Sleep(20 * time.Millisecond) // past the kernel's coarse clock tick
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = w.WriteAt([]byte(`{"v":2}`), 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.Chtimes(p, mtime, mtime))
	in, err := os.Open(p)
	require.NoError(t, err)
	after, _, err := statID(in)
	require.NoError(t, in.Close())
	require.NoError(t, err)
	require.Equal(t, [4]any{before.dev, before.ino, before.size, before.mtime}, [4]any{after.dev, after.ino, after.size, after.mtime}, "touch -d: all but the ctime as Source saw them")
	require.NotEqual(t, before.ctime, after.ctime)

	_, err = f.Fetch(context.Background(), t.TempDir())
	require.Error(t, err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
	require.Contains(t, err.Error(), "file changed while being ingested")
	require.True(t, l.rehashed[0], "the moved ctime sends it to the hash")
}

// TestFetchCatchesAFileReplacedByRename: a settled file replaced by
// another of the same size and times (an upload renamed into place) is
// another inode: hashed again, and refused.
func TestFetchCatchesAFileReplacedByRename(t *testing.T) {
	requireFileID(t)
	settleClock(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "d.geojson")
	mtime := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, os.WriteFile(p, []byte(`{"v":1}`), 0o644))
	require.NoError(t, os.Chtimes(p, mtime, mtime))
	_, f, err := Source(p)
	require.NoError(t, err)
	l := f.(*localFetcher)
	require.True(t, l.parts[0].settled)
	tmp := filepath.Join(dir, ".d.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(`{"v":2}`), 0o644))
	require.NoError(t, os.Chtimes(tmp, mtime, mtime))
	require.NoError(t, os.Rename(tmp, p))
	_, err = f.Fetch(context.Background(), t.TempDir())
	require.Error(t, err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
	require.True(t, l.rehashed[0])
}

// TestFetchOfASettledShapefileSet: every part of a settled set is copied
// without a second hash, and the set's token is Source's.
func TestFetchOfASettledShapefileSet(t *testing.T) {
	requireFileID(t)
	settleClock(t)
	dir := t.TempDir()
	for _, ext := range []string{".shp", ".shx", ".dbf"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s"+ext), []byte("part "+ext), 0o644))
	}
	src, f, err := Source(filepath.Join(dir, "s.shp"))
	require.NoError(t, err)
	l := f.(*localFetcher)
	require.Len(t, l.parts, 3)
	got, err := f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false}, l.rehashed)
	require.Equal(t, src.VersionToken, got.ContentHash)
}
