package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

// TestServeCrashHoldingPendingVersion: a truncated version (5 of 40
// features) that the guards hold. A `geoingest serve` worker is killed
// with SIGKILL before the hold commits: the first generation stays
// current and nothing is pending. A second worker holds it once; the
// notification delivered again holds nothing twice; the approval then
// makes it current, once, and verify is clean.
func TestServeCrashHoldingPendingVersion(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	c := newCrashEnv(t, "pending-crash")
	env := map[string]string{"DATABASE_URL": c.db}
	args := []string{"--lease", lease.String(), "--visibility", visibility.String()}
	o1 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 40), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o1))
	w := c.serve(t, nil, args...)
	eventually(t, 90*time.Second, "the first version committed", func() bool { return c.committed(t) && c.sqsEmpty(t) })
	w.stop(t)

	o2 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 5), 2)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o2))
	a := c.serve(t, []string{"GEOINGEST_TEST_CRASH_AT=" + ingest.HookBeforeCommit}, args...)
	select {
	case <-a.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("worker A never reached %s:\n%s", ingest.HookBeforeCommit, a.stderr.String())
	}
	require.True(t, a.killed(), "worker A died of SIGKILL:\n%s", a.stderr.String())
	require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM parcels`), "the first generation, whole")
	require.EqualValues(t, 0, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'pending'`))

	b := c.serve(t, nil, args...)
	eventually(t, lease+visibility+60*time.Second, "the version held and the queue drained", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'pending'`) == 1 && c.sqsEmpty(t)
	})
	// The same notification again: a duplicate.
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o2))
	eventually(t, 60*time.Second, "the duplicate drained", func() bool { return c.sqsEmpty(t) })
	b.stop(t)
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'pending'`))
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM geoingest_guard_events WHERE action = 'held'`))
	require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	code, out, errOut := run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	pending := queryString(t, c.db, `SELECT job_id FROM jobs WHERE status = 'pending'`)
	code, out, errOut = run(t, env, "pending", "approve", pending, "--reason", "the county split")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "pending", "approve", pending, "--reason", "again")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already")
	require.EqualValues(t, 5, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM geoingest_guard_events WHERE action = 'approved'`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// TestApproveKilledDuringRetire: `geoingest pending approve` is killed
// with SIGKILL when the generation it replaces is in the history (its
// partition detached and kept, or its rows copied) and COMMIT is not
// sent (during-retire). The version stays pending, the replaced
// generation current, whole and attached, nothing in the history; the
// approval run again applies it once: the generation in the history
// once, the rows as of a time before the approval still its own, verify
// clean.
func TestApproveKilledDuringRetire(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir(), "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	path := filepath.Join(t.TempDir(), "county.geojson")
	copyFile := func(from string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	copyFile(squaresFile(t, 40))
	code, out, errOut := run(t, env, "ingest", "--no-compact", path)
	require.Equal(t, 0, code, out+errOut)
	copyFile(squaresFile(t, 5)) // the next version of the source: held
	code, out, errOut = run(t, env, "ingest", "--no-compact", path)
	require.Equal(t, exitPending, code, out+errOut)
	pending := queryString(t, db, `SELECT job_id FROM jobs WHERE status = 'pending'`)
	ids := queryInt(t, db, `SELECT sum(feature_id)::bigint FROM parcels`)
	attached := queryInt(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`)
	time.Sleep(50 * time.Millisecond)
	before := time.Now().UTC()
	time.Sleep(50 * time.Millisecond)

	cmd := exec.Command(binary, "pending", "approve", pending, "--reason", "the county split", "--database-url", db, "--log-level", "info")
	cmd.Env = append(os.Environ(), "GEOINGEST_HOME="+env["GEOINGEST_HOME"], "GEOINGEST_TEST_PAUSE_AT=",
		"GEOINGEST_TEST_CRASH_AT="+ingest.HookDuringRetire)
	var outA testfiles.SyncBuffer
	cmd.Stdout, cmd.Stderr = &outA, &outA
	err := cmd.Run()
	require.Error(t, err, outA.String())
	require.Contains(t, err.Error(), "killed", outA.String())
	t.Logf("approval killed with the generation %s", map[bool]string{true: "copied (another session held a snapshot)",
		false: "detached"}[strings.Contains(outA.String(), "not kept")])
	require.Equal(t, pending, queryString(t, db, `SELECT job_id FROM jobs WHERE status = 'pending'`), "still pending")
	require.EqualValues(t, 40, queryInt(t, db, `SELECT count(*) FROM parcels`), "the replaced generation, whole")
	require.Equal(t, ids, queryInt(t, db, `SELECT sum(feature_id)::bigint FROM parcels`))
	require.Equal(t, attached, queryInt(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`), "its partition attached")
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_history()`), "nothing in the history")
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_retired_tables`))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_guard_events WHERE action = 'approved'`))

	code, out, errOut = run(t, env, "pending", "approve", pending, "--reason", "the county split")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "pending", "approve", pending, "--reason", "again")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already")
	require.EqualValues(t, 5, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM geoingest_guard_events WHERE action = 'approved'`))
	require.EqualValues(t, 40, queryInt(t, db, `SELECT count(*) FROM geoingest_history()`), "the replaced generation in the history, once")
	require.Equal(t, ids, queryInt(t, db, `SELECT sum(feature_id)::bigint FROM geoingest_history()`))
	require.EqualValues(t, 40, queryInt(t, db, `SELECT count(*) FROM geoingest_features_as_of('parcels', '`+before.Format(time.RFC3339Nano)+`')`),
		"as of a time before the approval: the replaced generation")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}
