package main

import (
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
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
