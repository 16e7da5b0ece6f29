package localfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestSourceOfAFolder: a folder is no upload. A File Geodatabase folder
// (as it lies on disk) is refused as a permanent error saying to zip it;
// another folder, saying to give its files. It was "read DIR: is a
// directory", from deep in the copy.
func TestSourceOfAFolder(t *testing.T) {
	dir := t.TempDir()
	gdb := filepath.Join(dir, "Parcels.gdb")
	require.NoError(t, os.Mkdir(gdb, 0o755))
	_, _, err := Source(gdb)
	require.Error(t, err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
	require.Contains(t, err.Error(), "Parcels.gdb is a File Geodatabase folder")
	require.Contains(t, err.Error(), "zip -r Parcels.gdb.zip Parcels.gdb")

	_, _, err = Source(dir)
	require.Error(t, err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
	require.Contains(t, err.Error(), "is a directory: give its files")
}
