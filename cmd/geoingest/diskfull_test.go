package main

import (
	"archive/zip"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// smallDisk mounts a tmpfs of size (mount's syntax, e.g. 2m) for the rest
// of the test and returns its path and a func that resizes it. The test
// is skipped, saying why, where mounting is not permitted (not root, or a
// container without CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size string) (string, func(size string)) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s tmpfs for the disk-full test (needs root and permission to mount): %v: %s", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir, func(size string) {
		out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput()
		require.NoError(t, err, string(out))
	}
}

// zipOf writes a zip holding src as name and returns its path.
func zipOf(t *testing.T, src, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upload.zip")
	f, err := os.Create(p)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	w, err := zw.Create(name)
	require.NoError(t, err)
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	_, err = io.Copy(w, in)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return p
}

// TestServeDiskFull: the work directory is a 2 MB tmpfs. A 4.3 MB GeoJSON
// fills it while downloading, and a zip of it (under 1 MB) while it is
// extracted. Each attempt fails as transient: the claim is released (not
// FAILED), nothing is dead-lettered, no partial file is left, and
// geoingest_disk_full_total counts it. Given room, both land on their
// next delivery.
func TestServeDiskFull(t *testing.T) {
	t.Parallel()
	work, resize := smallDisk(t, "2m")
	c := newCrashEnv(t, "diskfull")
	big := "../../testdata/synthetic/parcels_10k.geojson"
	o1 := upload(t, c.s3.Client, c.bucket, "parcels/big.geojson", big, 1)
	o2 := upload(t, c.s3.Client, c.bucket, "parcels/big.zip", zipOf(t, big, "parcels.geojson"), 2)
	require.Less(t, o2.size, int64(1<<20), "the zip fits; its extraction does not")
	addr := freeAddr(t)
	w := c.serve(t, nil, "--metrics-addr", addr, "--work-dir", work, "--workers", "1",
		"--backoff", "5s", "--backoff-max", "5s")
	eventually(t, 30*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o1))
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o2))

	eventually(t, 60*time.Second, "both uploads failing on the full disk", func() bool {
		return metricOf(t, addr, "geoingest_disk_full_total") >= 2
	})
	// Both messages are now given back for 5 s: no job runs. The count
	// comes first in an attempt's failure, then its log line, the claim's
	// release and (as the job returns) its files' removal: wait for those
	// (a fixed 300 ms raced them on a loaded machine), within the 5 s.
	eventually(t, 3*time.Second, "the second attempt's claim released and its files removed", func() bool {
		left, err := os.ReadDir(work)
		require.NoError(t, err)
		return len(left) == 0 && queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`) == 0
	})
	left, err := os.ReadDir(work)
	require.NoError(t, err)
	require.Empty(t, left, "the partial download and extraction are removed")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'FAILED'`), "a full disk is no fault of the upload")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`),
		"the claims are released")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM jobs`))
	require.Zero(t, metricOf(t, addr, `geoingest_jobs_failed_total{kind="permanent"}`))
	require.Zero(t, metricOf(t, addr, "geoingest_messages_dead_lettered_total"))
	stderr := w.stderr.String()
	require.Contains(t, stderr, "no space left on device")
	require.Contains(t, stderr, "the work directory "+work+" is full")
	require.Contains(t, stderr, "big.zip", "the zip failed too (while extracting)")
	require.NotContains(t, stderr, "level=ERROR")

	resize("64m")
	eventually(t, 60*time.Second, "both uploads landed once there was room", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 2 && c.sqsEmpty(t)
	})
	full := metricOf(t, addr, "geoingest_disk_full_total")
	t.Logf("disk full %v times before there was room; then both landed", full)
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "no space") {
			t.Log(l)
		}
	}
	w.stop(t)
	left, err = os.ReadDir(work)
	require.NoError(t, err)
	require.Empty(t, left)
	require.EqualValues(t, 20000, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.True(t, strings.Contains(stderr, "extract") || strings.Contains(stderr, "geomio-zip"), stderr)
}
