package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

func tinyFiles(t *testing.T, dir string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "parcels"), 0o755))
	for i := 0; i < n; i++ {
		x := 13.0 + float64(i)*0.001
		body := fmt.Sprintf(`{"type":"Feature","properties":{"n":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,52.5],[%g,52.5],[%g,52.5005],[%g,52.5]]]}}`, i, x, x+0.0005, x+0.0005, x)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", fmt.Sprintf("p%03d.geojson", i)), []byte(body), 0o644))
	}
	// Not jobs: a sidecar-less .dbf and a text file are filtered.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "old.dbf"), []byte("x"), 0o644))
}

func TestBackfillCommandLocal(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	tinyFiles(t, dir, 30)

	code, out, errOut := run(t, env, "backfill", "--dir", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "32 listed, 2 filtered, 30 written, 0 pending, 0 already present, 0 superseded, 0 failed")
	code, out, errOut = run(t, env, "backfill", "--bucket", "file", "--prefix", dir, "--workers", "2")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "30 already present", "skip is the default: committed keys do nothing")
	require.Contains(t, out, " 0 written")

	code, _, errOut = run(t, env, "backfill", "--dir", dir, "--policy", "new-key")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--policy new-key needs --pipeline-version")
	code, out, errOut = run(t, env, "backfill", "--dir", dir, "--policy", "new-key", "--pipeline-version", "2")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "pipeline version 2): 32 listed, 2 filtered, 30 written")
	require.EqualValues(t, 60, queryInt(t, db, `SELECT count(*) FROM parcels`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	// Reports say which pipeline version they count: the newest by default.
	code, out, errOut = run(t, env, "report", "area", "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, errOut, "counting the current generations of pipeline version 2")
	require.True(t, strings.HasPrefix(out, "admin_unit,parcels,area_m2,area_ha\n"), "stdout is the report alone: %q", out)
	code, _, errOut = run(t, env, "report", "area", "--pipeline-version", "1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "counting the current generations of pipeline version 1")
}

func TestIngestPolicyReplaceIfMatch(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	tinyFiles(t, dir, 1)
	file := filepath.Join(dir, "parcels", "p000.geojson")
	code, out, errOut := run(t, env, "ingest", "--json", file)
	require.Equal(t, 0, code, errOut)
	first := parseLines(t, out)[0]

	code, _, errOut = run(t, env, "ingest", "--policy", "replace", file)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--policy replace needs --if-match")

	code, out, _ = run(t, env, "ingest", "--json", "--policy", "replace", "--if-match", strings.Repeat("0", 64), file)
	require.Equal(t, 1, code)
	require.Contains(t, parseLines(t, out)[0].Error, "precondition failed")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs`), "a failed precondition writes nothing")

	code, out, errOut = run(t, env, "ingest", "--json", "--policy", "replace", "--if-match", first.JobID, file)
	require.Equal(t, 0, code, errOut)
	repair := parseLines(t, out)[0]
	require.Equal(t, "written", repair.Outcome)
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'replaced' AND job_id = $1`, first.JobID))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM parcels WHERE job_ref = geoingest_job_ref($1)`, repair.JobID))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM parcels`))
}

// TestBackfillCommandS3 lists a versioned bucket and checks that the jobs
// have the keys live events would give them (versionId tokens), so a gap
// fill after live ingest finds them committed.
func TestBackfillCommandS3(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	st := testsrv.S3(t)
	sq := testsrv.SQS(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "archive"
	st.NewBucket(t, bucket, true)
	dir := t.TempDir()
	tinyFiles(t, dir, 3)
	var objs []object
	for i := 0; i < 3; i++ {
		objs = append(objs, upload(t, st.Client, bucket, fmt.Sprintf("parcels/p%03d.geojson", i), filepath.Join(dir, "parcels", fmt.Sprintf("p%03d.geojson", i)), i+1))
	}
	upload(t, st.Client, bucket, "elsewhere/x.geojson", filepath.Join(dir, "parcels", "p000.geojson"), 9)
	env := with(awsEnv, "DATABASE_URL", db)
	code, out, errOut := run(t, env, "backfill", "--bucket", bucket, "--prefix", "parcels/", "--route", "parcels/=parcels")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "3 listed, 0 filtered, 3 written")
	for _, o := range objs {
		key, err := ingest.JobKey(bucket, o.key, o.versionID, ingest.DefaultParams("parcels").Map())
		require.NoError(t, err)
		require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_id = $1 AND status = 'current'`, key), o.key)
	}
	code, out, errOut = run(t, env, "backfill", "--bucket", bucket, "--prefix", "parcels/", "--route", "parcels/=parcels")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "3 already present")
}
