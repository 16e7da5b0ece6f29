package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestBackfillCommandGCSAndAzure: backfill --bucket gs://B and
// azblob://ACCOUNT/CONTAINER list the prefix, write one job per object
// with the key a live event of that version gives (generation; ETag), and
// a second run finds them all present.
func TestBackfillCommandGCSAndAzure(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	g := testsrv.GCP(t)
	az := testsrv.Azurite(t)
	dir := t.TempDir()
	tinyFiles(t, dir, 3)
	file := func(i int) string { return filepath.Join(dir, "parcels", fmt.Sprintf("p%03d.geojson", i)) }

	bucket := testsrv.Unique("archive")
	g.NewBucket(t, bucket, false, "")
	container := az.NewContainer(t, "archive")
	type want struct{ bucket, key, token string }
	var wants []want
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("parcels/p%03d.geojson", i)
		ev := gcsPut(t, g, bucket, key, file(i))
		wants = append(wants, want{bucket, key, ev.VersionID})
		wants = append(wants, want{container, key, azurePut(t, az.Blob, container, key, file(i))})
	}
	gcsPut(t, g, bucket, "elsewhere/x.geojson", file(0))
	azurePut(t, az.Blob, container, "elsewhere/x.geojson", file(0))

	env := map[string]string{"DATABASE_URL": db, "AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString}
	for _, b := range []string{"gs://" + bucket, "azblob://" + testsrv.AzureAccount + "/" + container} {
		code, out, errOut := run(t, env, "backfill", "--bucket", b, "--prefix", "parcels/", "--route", "parcels/=parcels")
		require.Equal(t, 0, code, out+errOut)
		require.Contains(t, out, "3 listed, 0 filtered, 3 written", b)
		require.Contains(t, out, "backfill "+b+"/parcels/", "the summary names the bucket's URL")
		code, out, errOut = run(t, env, "backfill", "--bucket", b, "--prefix", "parcels/", "--route", "parcels/=parcels")
		require.Equal(t, 0, code, out+errOut)
		require.Contains(t, out, "3 already present", b)
	}
	for _, w := range wants {
		key, err := ingest.JobKey(w.bucket, w.key, w.token, ingest.DefaultParams("parcels").Map())
		require.NoError(t, err)
		require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_id = $1 AND status = 'current'`, key), w)
	}
	code, _, errOut := run(t, env, "backfill", "--bucket", "azblob://"+testsrv.AzureAccount, "--prefix", "parcels/")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "azblob://ACCOUNT/CONTAINER")
}
