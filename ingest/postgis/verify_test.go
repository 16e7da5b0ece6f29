package postgis

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// rpDuplicatedRun ingests the Bristol pair with every delivery duplicated,
// two of them concurrently, and returns the parcels' job.
func (e *rpEnv) rpDuplicatedRun(t *testing.T) ingest.Job {
	t.Helper()
	ctx := context.Background()
	job := rpJob(t, rpBristolMSOA, "parcels")
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.svc.Run(ctx, job)
			require.NoError(t, res.Err)
		}()
	}
	wg.Wait()
	e.rpIngest(t, rpBristolMSOA, "parcels")
	e.rpIngest(t, rpBristolBoundary, "admin_units")
	e.rpIngest(t, rpBristolBoundary, "admin_units")
	return job
}

func (e *rpEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := e.pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func requireClean(t *testing.T, e *rpEnv) *ingest.Verification {
	t.Helper()
	v, err := e.store.Verify(context.Background())
	require.NoError(t, err)
	require.True(t, v.OK(), "problems: %v", v.Problems)
	return v
}

// requireNames verifies and requires the problems to name exactly job,
// under check.
func requireNames(t *testing.T, e *rpEnv, job, check string) {
	t.Helper()
	v, err := e.store.Verify(context.Background())
	require.NoError(t, err)
	require.False(t, v.OK(), "verify found nothing")
	require.Equal(t, []string{job}, v.OffendingJobs(), "problems: %v", v.Problems)
	var checks []string
	for _, p := range v.Problems {
		checks = append(checks, p.Check)
	}
	require.Contains(t, checks, check, "problems: %v", v.Problems)
}

// requirePending verifies and requires no problem, with exactly job's
// report assignment pending.
func requirePending(t *testing.T, e *rpEnv, job string) {
	t.Helper()
	v := requireClean(t, e)
	require.Equal(t, []string{job}, v.PendingAssignments)
}

func TestVerifyCleanAfterDuplicatedDeliveries(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	e.rpDuplicatedRun(t)
	v := requireClean(t, e)
	require.EqualValues(t, 2, v.Jobs)
	require.EqualValues(t, 2, v.CurrentJobs)
	require.EqualValues(t, 72, v.Parcels)
	require.EqualValues(t, 1, v.AdminUnits)
}

func TestVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, check string
		tamper      func(t *testing.T, e *rpEnv, job string)
		// offender is the job verify must name; "" means the parcels job.
		offender string
	}{
		{name: "row inserted", check: "feature count", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `INSERT INTO parcels (job_ref, feature_index, properties, geom)
				SELECT job_ref, feature_index + 1000, properties, geom FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 0`, job)
		}},
		{name: "row deleted", check: "feature count", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `DELETE FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 5`, job)
		}},
		{name: "geometry changed", check: "area", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE parcels SET geom = ST_Multi(ST_Buffer(geom, 0.0001)) WHERE job_ref = geoingest_job_ref($1) AND feature_index = 7`, job)
		}},
		{name: "row area changed", check: "row area", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE parcels SET area_m2 = area_m2 * (1 + 1e-6) WHERE job_ref = geoingest_job_ref($1) AND feature_index = 0`, job)
		}},
		{name: "row area missing", check: "row area", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE parcels SET area_m2 = NULL WHERE job_ref = geoingest_job_ref($1) AND feature_index = 3`, job)
		}},
		{name: "properties changed", check: "checksum", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE parcels SET properties = properties || '{"edited": true}' WHERE job_ref = geoingest_job_ref($1) AND feature_index = 9`, job)
		}},
		{name: "geometry moved, same area", check: "checksum", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE parcels SET geom = ST_Translate(geom, 0, 0.00001) WHERE job_ref = geoingest_job_ref($1) AND feature_index = 11`, job)
		}},
		{name: "row of an unknown job", check: "stray features", offender: "job_ref -4242",
			tamper: func(t *testing.T, e *rpEnv, job string) {
				e.exec(t, `INSERT INTO parcels (job_ref, feature_index, geom)
					SELECT -4242, 0, geom FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 0`, job)
			}},
		{name: "two current generations", check: "sources", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `UPDATE sources SET current_job_id = NULL WHERE current_job_id = $1`, job)
		}},
		{name: "claim missing", check: "claims", tamper: func(t *testing.T, e *rpEnv, job string) {
			e.exec(t, `DELETE FROM claims WHERE job_id = $1`, job)
		}},
		{name: "claim without ledger", check: "claims", offender: strings.Repeat("cd", 32),
			tamper: func(t *testing.T, e *rpEnv, job string) {
				e.exec(t, `INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
					VALUES ($1, 'COMMITTED', 'x', now(), 'b', 'k')`, strings.Repeat("cd", 32))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := rpSetup(t)
			job := e.rpDuplicatedRun(t)
			requireClean(t, e)
			tc.tamper(t, e, job.ID)
			want := tc.offender
			if want == "" {
				want = job.ID
			}
			requireNames(t, e, want, tc.check)
		})
	}
}

// TestVerifyScopeSinceCatchesRecentSkipsOld: verify's incremental mode
// (--since) finds a corrupted row of a job committed within the window
// and does not read an old job's rows, which only the full check (and
// --source) still finds.
func TestVerifyScopeSinceCatchesRecentSkipsOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := rpSetup(t)
	old := rpJob(t, rpBristolMSOA, "parcels")
	e.rpIngest(t, rpBristolMSOA, "parcels")
	// The old job, its source and its claim as they would be two days on.
	e.exec(t, `UPDATE jobs SET committed_at = committed_at - interval '2 days' WHERE job_id = $1`, old.ID)
	e.exec(t, `UPDATE sources SET updated_at = updated_at - interval '2 days' WHERE current_job_id = $1`, old.ID)
	e.exec(t, `UPDATE claims SET updated_at = updated_at - interval '2 days' WHERE job_id = $1`, old.ID)

	recentPath := filepath.Join(t.TempDir(), "recent.geojson")
	b, err := os.ReadFile(rpBristolMSOA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(recentPath, b, 0o644))
	recent := rpJob(t, recentPath, "parcels")
	e.rpIngest(t, recentPath, "parcels")

	hour := ingest.VerifyScope{Since: time.Now().Add(-time.Hour)}
	v, err := e.store.VerifyScope(ctx, hour)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
	require.EqualValues(t, 1, v.Jobs, "only the recent job is in scope")
	require.EqualValues(t, 72, v.Parcels)

	for _, j := range []string{old.ID, recent.ID} {
		e.exec(t, `UPDATE parcels SET properties = properties || '{"edited": true}' WHERE job_ref = geoingest_job_ref($1) AND feature_index = 9`, j)
	}
	v, err = e.store.VerifyScope(ctx, hour)
	require.NoError(t, err)
	require.Equal(t, []string{recent.ID}, v.OffendingJobs(), "%v", v.Problems)
	require.Equal(t, "checksum", v.Problems[0].Check)

	full, err := e.store.Verify(ctx)
	require.NoError(t, err)
	want := []string{old.ID, recent.ID}
	sort.Strings(want)
	require.Equal(t, want, full.OffendingJobs(), "the full check finds both")

	// By source: the old job's key, whatever its age.
	bySource, err := e.store.VerifyScope(ctx, ingest.VerifyScope{Source: old.Source.Key})
	require.NoError(t, err)
	require.Equal(t, []string{old.ID}, bySource.OffendingJobs(), "%v", bySource.Problems)

	// A COMMITTED claim with no ledger row, changed recently, is in scope
	// too.
	e.exec(t, `INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
		VALUES ($1, 'COMMITTED', 'x', now(), 'b', 'k')`, strings.Repeat("cd", 32))
	v, err = e.store.VerifyScope(ctx, hour)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{recent.ID, strings.Repeat("cd", 32)}, v.OffendingJobs(), "%v", v.Problems)
}
