package main

import (
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestServeCrashDuringRetire kills a `geoingest serve` worker with SIGKILL
// while it deletes a source whose generation has a partition of its own:
// with that generation in the history (its partition detached and kept,
// migration 0046, or its rows copied when another session held a
// snapshot), before COMMIT (during-retire). The generation stays current,
// whole and attached, with nothing in the history and no table kept; a
// second worker then applies the delete exactly once: no rows left, the
// 40 in the history once (the same feature ids), the rows as of a time
// before the delete still the generation's, verify clean.
func TestServeCrashDuringRetire(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	c := newCrashEnv(t, "retire")
	// No compaction: the generation keeps its partition until the delete.
	args := []string{"--lease", lease.String(), "--visibility", visibility.String(), "--route", "parcels/=parcels+deletes",
		"--compact-every", "0"}
	env := []string{"GEOINGEST_OWN_PARTITION_BYTES=1"}
	o := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 40), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	w := c.serve(t, env, args...)
	eventually(t, 90*time.Second, "the version committed", func() bool { return c.committed(t) && c.sqsEmpty(t) })
	w.stop(t)
	ids := queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels`)
	attached := queryInt(t, c.db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`)
	time.Sleep(50 * time.Millisecond)
	before := time.Now().UTC()
	time.Sleep(50 * time.Millisecond)

	sendBody(t, c.sqs.Client, c.queueURL, removal(c.bucket, o, 2))
	a := c.serve(t, append([]string{"GEOINGEST_TEST_CRASH_AT=" + ingest.HookDuringRetire}, env...), args...)
	select {
	case <-a.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("worker A never reached %s:\n%s", ingest.HookDuringRetire, a.stderr.String())
	}
	require.True(t, a.killed(), "worker A died of SIGKILL at %s:\n%s", ingest.HookDuringRetire, a.stderr.String())
	t.Logf("worker A killed with the generation %s", map[bool]string{true: "copied (another session held a snapshot)",
		false: "detached"}[strings.Contains(a.stderr.String(), "not kept")])
	require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM parcels`), "the generation, whole")
	require.Equal(t, ids, queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels`))
	require.Equal(t, attached, queryInt(t, c.db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`), "its partition attached")
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'deleted'`))
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM geoingest_history()`), "nothing in the history")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM geoingest_retired_tables`))
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM pg_class WHERE relname LIKE 'parcels\_retired\_%'`), "no table kept")

	b := c.serve(t, env, args...)
	eventually(t, lease+visibility+60*time.Second, "the delete committed and the queue drained", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'deleted'`) == 1 && c.sqsEmpty(t)
	})
	b.stop(t)
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'retired'`))
	require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM geoingest_history()`), "the generation in the history, once")
	require.Equal(t, ids, queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM geoingest_history()`))
	t.Logf("kept whole: %d table(s); copied: %d rows", queryInt(t, c.db, `SELECT count(*) FROM geoingest_retired_tables`),
		queryInt(t, c.db, `SELECT count(*) FROM feature_history`))
	require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM geoingest_features_as_of('parcels', '`+before.Format(time.RFC3339Nano)+`')`),
		"as of a time before the delete: the generation")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM geoingest_features_as_of('parcels', now())`))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, out+errOut)
}
