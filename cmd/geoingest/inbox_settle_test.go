package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestServeInboxWaitsForACompleteFile is issue 24's reproduction: a
// 10k-parcel GeoJSON copied into parcels/ in two halves, the pause between
// them longer than the poll interval but shorter than --settle. The inbox
// takes the file only once complete: no FAILED claim, no error logged, one
// job with every parcel. A copy tool's temporary name beside it (a .part
// file, an rsync dotfile) is never taken.
func TestServeInboxWaitsForACompleteFile(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "parcels"), 0o755))
	content, err := os.ReadFile("../../testdata/synthetic/parcels_10k.geojson")
	require.NoError(t, err)
	srv := startServe(t, nil, "--inbox", dir, "--workers", "2", "--database-url", db, "--poll", "100ms", "--settle", "3s")

	for _, n := range []string{"parcels/.county.geojson.Q1w2E3", "parcels/county2.geojson.part"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), content[:len(content)/3], 0o644))
	}
	f, err := os.Create(filepath.Join(dir, "parcels", "county.geojson"))
	require.NoError(t, err)
	half := len(content) / 2
	_, err = f.Write(content[:half])
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // 15 polls: the old rule took the half
	_, err = f.Write(content[half:])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	written := time.Now()

	eventually(t, 60*time.Second, "the file ingested", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 1
	})
	t.Logf("ingested %.1fs after its last byte (--settle 3s)", time.Since(written).Seconds())
	time.Sleep(time.Second)
	srv.stop(t)
	require.EqualValues(t, 10000, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims`), "one claim: the complete file's")
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED'`))
	require.NotContains(t, srv.stderr.String(), "level=ERROR")
	require.False(t, strings.Contains(srv.stderr.String(), "county2"), "a .part file is never taken")
}
