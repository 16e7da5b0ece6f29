package pgcluster

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// As root, a data directory under a private folder (mktemp -d's 0700) is
// refused before initdb, with the folder named and the fix; once the
// folder may be entered, the check passes.
func TestStartNamesAPrivateFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the cluster runs as another user only when started by root")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skip("no postgres OS user")
	}
	if _, err := BinDir(); err != nil {
		t.Skip(err)
	}
	private, err := os.MkdirTemp("", "pgcluster-private-") // 0700, as mktemp -d
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(private) })
	dir := filepath.Join(private, "home", "pgdata")
	_, err = Start(context.Background(), dir, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), `the OS user "postgres"`)
	require.Contains(t, err.Error(), "may not enter "+private+" (mode 0700")
	require.Contains(t, err.Error(), "chmod o+x "+private)
	require.NoFileExists(t, filepath.Join(dir, "PG_VERSION"), "refused before initdb")

	require.NoError(t, os.Chmod(private, 0o711))
	require.NoError(t, reachable(dir, u))
	require.NoError(t, os.Chmod(filepath.Join(private, "home"), 0o700))
	require.ErrorContains(t, reachable(dir, u), "may not enter "+filepath.Join(private, "home"))
}
