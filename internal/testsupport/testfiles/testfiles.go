// Package testfiles builds the files tests feed to geoingest: zips with
// chosen (also hostile) entries, copies of corpus shapefile sets, and a
// log buffer safe for concurrent writers. Test code only.
package testfiles

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Zip writes a zip of entries (name, bytes, name, bytes, ...), in that
// order and with the names as given ("../x" included), to path, and
// returns path.
func Zip(t testing.TB, path string, entries ...any) string {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for i := 0; i < len(entries); i += 2 {
		w, err := zw.Create(entries[i].(string))
		require.NoError(t, err)
		_, err = w.Write(entries[i+1].([]byte))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return path
}

// CopySet copies src+ext to dir/name+ext for each ext (a shapefile set's
// parts) and returns dir/name.shp.
func CopySet(t testing.TB, src, dir, name string, exts ...string) string {
	t.Helper()
	for _, ext := range exts {
		data, err := os.ReadFile(src + ext)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+ext), data, 0o644))
	}
	return filepath.Join(dir, name+".shp")
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (workers'
// logs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
