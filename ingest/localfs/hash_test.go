package localfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestHashFile: the pipelined hash and copy give the file's SHA-256 and
// its exact bytes, whatever the size against the chunk size.
func TestHashFile(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, hashChunk - 1, hashChunk, hashChunk + 1, hashChunks*hashChunk + 3, 3*hashChunks*hashChunk + 17} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.UintN(256))
		}
		p := filepath.Join(dir, "f")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		want := sha256.Sum256(data)

		sum, err := hashFile(p, nil)
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want[:]), sum, "%d bytes", n)

		var copied bytes.Buffer
		sum, err = hashFile(p, &copied)
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want[:]), sum, "%d bytes, copied", n)
		require.True(t, bytes.Equal(data, copied.Bytes()), "%d bytes: the copy", n)
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

// TestHashFileWriteError: a failed write fails the copy, after the reader
// and the hasher have drained (no goroutine is left blocked).
func TestHashFileWriteError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, make([]byte, 10*hashChunk), 0o644))
	_, err := hashFile(p, &failingWriter{after: 2})
	require.ErrorContains(t, err, "disk full")
	_, err = hashFile(filepath.Join(t.TempDir(), "missing"), nil)
	require.Error(t, err)
}

// hashFile opens path and hashes it with hashOpen, copying it to w on the
// way when w is not nil.
func hashFile(path string, w io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", ingest.Permanentf("%s: %w", path, err)
	}
	defer f.Close()
	return hashOpen(f, path, w)
}
