package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestServeCrashDuringDiff kills a `geoingest serve` worker with SIGKILL
// while it applies a new version of a source as changes: with the version
// staged and checked, before its diff is applied (during-diff), and with
// the diff applied, before COMMIT (before-commit). Each time the first
// generation stays current, whole, with its one change record, and the
// history holds nothing (nothing of the uncommitted version); a second
// worker then applies the version exactly once: 5 features added, 3
// removed, 5 with changed attributes, 32 unchanged, the 37 kept with their
// feature ids, one change record for it, verify clean, and each of the 8
// retired rows in the history exactly once, as the first version had it.
// during-rewrite: the same with every version written straight into a
// table of its own (the whole first generation retired into the history).
// during-prefilter: killed once the raw-bytes prefilter (on by default)
// has listed the features kept by their bytes and filled the reader's skip
// set, before the second read (the other points run with it too, but
// during-rewrite, which it does not take).
func TestServeCrashDuringDiff(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	for _, point := range []string{ingest.HookDuringPrefilter, ingest.HookDuringDiff, ingest.HookDuringRewrite, ingest.HookBeforeCommit} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			c := newCrashEnv(t, "diff-"+point)
			args := []string{"--lease", lease.String(), "--visibility", visibility.String()}
			// during-rewrite: every version has a table of its own and is
			// written straight into it from the spool, the old generation
			// retired whole (into the history: its 40 rows).
			rewrite := point == ingest.HookDuringRewrite
			var env []string
			if rewrite {
				env = []string{"GEOINGEST_OWN_PARTITION_BYTES=1", "GEOINGEST_DIFF_REWRITE_ABOVE=-1"}
			}
			o1 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 40), 1)
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o1))
			w := c.serve(t, env, args...)
			eventually(t, 90*time.Second, "the first version committed", func() bool { return c.committed(t) && c.sqsEmpty(t) })
			w.stop(t)
			ids := queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels`)

			o2 := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", changedSquaresFile(t, 45, 3, 5), 2)
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o2))
			a := c.serve(t, append([]string{"GEOINGEST_TEST_CRASH_AT=" + point}, env...), args...)
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
			require.EqualValues(t, 0, queryInt(t, c.db, `SELECT count(*) FROM geoingest_history()`), "nothing of the uncommitted version in the history")
			retired := queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels WHERE (properties->>'i')::int < 8`)

			b := c.serve(t, env, args...)
			eventually(t, lease+visibility+60*time.Second, "the new version committed and the queue drained", func() bool {
				return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'replaced'`) == 1 && c.sqsEmpty(t)
			})
			b.stop(t)
			require.EqualValues(t, 42, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
			require.EqualValues(t, 2, queryInt(t, c.db, `SELECT count(*) FROM job_changes`), "one change record per version")
			require.Equal(t, map[string]int64{"added": 5, "removed": 3, "attributes": 5, "geometry": 0, "unchanged": 32},
				queryPairs(t, c.db, `SELECT k, v FROM job_changes, LATERAL (VALUES ('added', added), ('removed', removed),
					('attributes', attributes), ('geometry', geometry), ('unchanged', unchanged)) AS x (k, v) WHERE base_job_id IS NOT NULL`))
			require.EqualValues(t, 13, queryInt(t, c.db, `SELECT count(*) FROM feature_changes`))
			require.EqualValues(t, ids-retired+queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels WHERE (properties->>'i')::int BETWEEN 3 AND 7`),
				queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM parcels WHERE (properties->>'i')::int < 40`),
				"the 37 kept features keep their ids")
			// The history: each retired row once, by the version that
			// retired it, as the first version had it.
			n, sum := int64(8), retired
			if rewrite {
				n, sum = 40, ids
			}
			require.EqualValues(t, n, queryInt(t, c.db, `SELECT count(*) FROM geoingest_history()`))
			require.EqualValues(t, n, queryInt(t, c.db, `SELECT count(DISTINCT feature_id) FROM geoingest_history()`))
			require.EqualValues(t, sum, queryInt(t, c.db, `SELECT sum(feature_id)::bigint FROM geoingest_history()`))
			require.EqualValues(t, n, queryInt(t, c.db, `SELECT count(*) FROM geoingest_history() h JOIN job_changes c ON c.job_id = h.retired_by
				WHERE c.base_job_id IS NOT NULL AND NOT h.properties ? 'sold' AND (h.properties->>'i')::int < $1`, n))
			code, out, errOut := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
			require.Equal(t, 0, code, out+errOut)
		})
	}
}

// changedSquaresFile is squaresFile(n) with the first removed squares left
// out and the next changed ones given the attribute "sold" (the same
// geometry: matched by overlap, their attributes changed).
func changedSquaresFile(t *testing.T, n, removed, changed int) string {
	t.Helper()
	var fs []string
	for i := removed; i < n; i++ {
		x := 13.0 + float64(i)*0.01
		props := fmt.Sprintf(`{"i":%d}`, i)
		if i < removed+changed {
			props = fmt.Sprintf(`{"i":%d,"sold":true}`, i)
		}
		fs = append(fs, fmt.Sprintf(`{"type":"Feature","properties":%s,"geometry":{"type":"Polygon","coordinates":[[[%g,52.5],[%g,52.5],[%g,52.501],[%g,52.501],[%g,52.5]]]}}`,
			props, x, x+0.001, x+0.001, x, x))
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("changed%d.geojson", n))
	require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",")+`]}`), 0o644))
	return p
}
