package main

import (
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testhook"
	"github.com/stretchr/testify/require"
)

// TestServeCrashDuringDiff kills a `geoingest serve` worker with SIGKILL
// while it applies a new version of a source as changes: with the version
// staged and checked, before its diff is applied (during-diff), and with
// the diff applied, before COMMIT (before-commit). Each time the first
// generation stays current, whole, with its one change record; a second
// worker then applies the version exactly once: 5 features added, 40
// kept with their feature ids, one change record for it, verify clean.
func TestServeCrashDuringDiff(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	for _, point := range []string{testhook.DuringDiff, testhook.BeforeCommit} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			c := newCrashEnv(t, "diff-"+point)
			args := []string{"--lease", lease.String(), "--visibility", visibility.String()}
			o1 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 40), 1)
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o1))
			w := c.serve(t, nil, args...)
			eventually(t, 90*time.Second, "the first version committed", func() bool { return c.committed(t) && c.sqsEmpty(t) })
			w.stop(t)
			ids := queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels`)

			o2 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 45), 2)
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o2))
			a := c.serve(t, []string{"GEOINGEST_TEST_CRASH_AT=" + point}, args...)
			select {
			case <-a.exited:
			case <-time.After(90 * time.Second):
				t.Fatalf("worker A never reached %s:\n%s", point, a.stderr.String())
			}
			require.True(t, a.killed(), "worker A died of SIGKILL at %s:\n%s", point, a.stderr.String())
			require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM parcels`), "the first generation, whole")
			require.EqualValues(t, 0, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'replaced'`))
			require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM job_changes`))
			require.EqualValues(t, ids, queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels`))

			b := c.serve(t, nil, args...)
			eventually(t, lease+visibility+60*time.Second, "the new version committed and the queue drained", func() bool {
				return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'replaced'`) == 1 && c.sqsEmpty(t)
			})
			b.stop(t)
			require.EqualValues(t, 45, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
			require.EqualValues(t, 2, queryInt(t, c.db, `SELECT count(*) FROM job_changes`), "one change record per version")
			require.EqualValues(t, 5, queryInt(t, c.db, `SELECT added FROM job_changes WHERE base_job_id IS NOT NULL`))
			require.EqualValues(t, 40, queryInt(t, c.db, `SELECT unchanged FROM job_changes WHERE base_job_id IS NOT NULL`))
			require.EqualValues(t, 5, queryInt(t, c.db, `SELECT count(*) FROM feature_changes`))
			require.EqualValues(t, ids, queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels WHERE (properties->>'i')::int < 40`),
				"the 40 kept features keep their ids")
			code, out, errOut := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
			require.Equal(t, 0, code, out+errOut)
		})
	}
}
