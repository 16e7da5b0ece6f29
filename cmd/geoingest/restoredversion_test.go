package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestIngestOfARestoredFileSaysHowToApplyIt: a file whose bytes were a
// version written before and since replaced (a county restores last
// month's export) is that job again: already-present, nothing changed.
// ingest says so on stderr, with the command that makes those bytes
// current again, and that command does.
func TestIngestOfARestoredFileSaysHowToApplyIt(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	dir := t.TempDir()
	path := filepath.Join(dir, "county.geojson")
	writeSquareSource(t, path, 0, 20)
	v1, err := os.ReadFile(path)
	require.NoError(t, err)
	code, out, errOut := run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	first := queryString(t, db, `SELECT current_job_id FROM sources`)
	require.NotContains(t, errOut, "these bytes are job")

	writeSquareSource(t, path, 0, 25)
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	second := queryString(t, db, `SELECT current_job_id FROM sources`)
	require.NotEqual(t, first, second)

	require.NoError(t, os.WriteFile(path, v1, 0o644))
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already-present")
	require.NotContains(t, out, "0 features, 0 m²", "the restored file has 20 features: no count rather than a wrong one")
	require.Contains(t, out, "(committed before: geoingest jobs show "+first[:12]+")")
	require.Contains(t, errOut, "these bytes are job "+first+", written before and now ")
	want := "geoingest ingest --policy replace --if-match " + second + " " + path
	require.Contains(t, errOut, want)
	require.Equal(t, second, queryString(t, db, `SELECT current_job_id FROM sources`), "nothing changed")

	code, out, errOut = run(t, env, strings.Fields(strings.TrimPrefix(want, "geoingest "))...)
	require.Equal(t, 0, code, out+errOut)
	require.EqualValues(t, 20, queryInt(t, db, `SELECT j.feature_count FROM jobs j JOIN sources s ON s.current_job_id = j.job_id`),
		"the restored bytes are current")

	// The current job's own bytes again: no hint.
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already-present")
	require.NotContains(t, errOut, "these bytes are job")
}

// TestIngestOfAPendingFileSaysHowToApproveIt: the bytes of a version a
// guard holds, ingested again, are that pending job: ingest says so and
// names `pending show` and `pending approve`, where it said "now pending"
// and told to make them "current again" with --policy replace. It
// reports the version pending, as the first run did (outcome pending,
// its reason, exit status 4), and so does a backfill over it: they said
// already-present and exited 0, as if the version were done.
func TestIngestOfAPendingFileSaysHowToApproveIt(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	path := filepath.Join(t.TempDir(), "county.geojson")
	writeSquareSource(t, path, 0, 20)
	code, out, errOut := run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)

	writeSquareSource(t, path, 0, 2) // shrunk by 90 %: the shrink guard holds it
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, exitPending, code, out+errOut)
	held := strings.Fields(out)[0]

	heldErr := errOut

	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, exitPending, code, out+errOut)
	require.Contains(t, out, held+"  pending ")
	require.Contains(t, out, " 2 features")
	require.Contains(t, errOut, heldErr, "the first run's message again")
	require.Contains(t, errOut, "held as pending by a guard and not applied")
	require.Contains(t, errOut, "geoingest pending show "+held)
	require.Contains(t, errOut, "geoingest pending approve "+held+" --reason TEXT")
	require.NotContains(t, errOut, "--policy replace")
	require.NotContains(t, errOut, "current again")

	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, exitPending, code, out+errOut)
	l := parseLines(t, out)[0]
	require.Equal(t, "pending", l.Outcome)
	require.Contains(t, out, `"reason":"shrink: features down 90.0% (20 -> 2; threshold 20%)`)

	code, out, errOut = run(t, env, "backfill", "--dir", filepath.Dir(path), "--quiet")
	require.Equal(t, exitPending, code, out+errOut)
	require.Contains(t, out, " 1 pending, 0 already present")

	// Decided, the bytes are a duplicate again, done.
	code, out, errOut = run(t, env, "pending", "reject", held, "--reason", "truncated")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already-present")
}

// TestBackfillForceSaysAHeldVersionIsApproved: backfill --force --reason
// over a version a guard held before applies nothing (the job is
// committed, pending: its bytes again are that job) and exits 4; it says
// so and how to apply it (pending approve), where it said only "1
// versions held as pending by a guard", as if --force had been ignored.
func TestBackfillForceSaysAHeldVersionIsApproved(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "GEOINGEST_HOME": t.TempDir()}
	dir := t.TempDir()
	path := filepath.Join(dir, "county.geojson")
	writeSquareSource(t, path, 0, 20)
	code, out, errOut := run(t, env, "backfill", "--dir", dir, "--quiet")
	require.Equal(t, 0, code, out+errOut)
	writeSquareSource(t, path, 0, 2)
	code, out, errOut = run(t, env, "backfill", "--dir", dir, "--quiet")
	require.Equal(t, exitPending, code, out+errOut)
	code, out, errOut = run(t, env, "backfill", "--dir", dir, "--quiet", "--force", "--reason", "the county says so")
	require.Equal(t, exitPending, code, out+errOut)
	require.Contains(t, out, " 1 pending,")
	require.Contains(t, errOut, "--force applies new versions only")
	require.Contains(t, errOut, "geoingest pending approve JOB --reason TEXT")
}
