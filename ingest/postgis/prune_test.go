package postgis

import (
	"context"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

func ledgerRows(t *testing.T, b *bundle) (jobs, claims int64) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM claims)`).Scan(&jobs, &claims))
	return jobs, claims
}

// TestPruneLateRedeliveryStaysSuperseded: prune removes the ledger rows
// and claims of old replaced versions (keeping the newest N, and nothing
// younger than MinAge), and a late redelivery of a removed version, which
// then passes both gates as a new job, is committed as superseded by the
// source's current_order: it never becomes a current generation.
func TestPruneLateRedeliveryStaysSuperseded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v := func(token, seq string, n int) ingest.Job {
		return version(t, squares(t, token+".geojson", n, 0.001), token, seq, ingest.DefaultParams("parcels"))
	}
	v1, v2, v3, v4 := v("v1", "10", 1), v("v2", "20", 2), v("v3", "30", 3), v("v4", "40", 4)
	for _, j := range []ingest.Job{v1, v2, v3, v4} {
		require.Equal(t, ingest.Written, b.svc.Run(ctx, j).Outcome)
	}
	before := currentOf(t, b)
	require.Equal(t, v4.ID, before.Current)

	r, err := b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 0, MinAge: time.Hour})
	require.NoError(t, err)
	require.Zero(t, r.Jobs, "nothing younger than MinAge goes")

	r, err = b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 2, DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Jobs, "a dry run counts")
	jobs, claims := ledgerRows(t, b)
	require.EqualValues(t, 4, jobs, "a dry run removes nothing")
	require.EqualValues(t, 4, claims)

	r, err = b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 2})
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Jobs, "v1 only: v2 and v3 are the newest 2 superseded")
	require.EqualValues(t, 1, r.Claims)
	r, err = b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 0, Batch: 1})
	require.NoError(t, err)
	require.EqualValues(t, 2, r.Jobs, "v2 and v3, one per batch")
	jobs, claims = ledgerRows(t, b)
	require.EqualValues(t, 1, jobs)
	require.EqualValues(t, 1, claims)
	requireVerified(t, b)

	// Late redeliveries of the removed versions: no ledger row, no claim,
	// so both gates let them in, and the order stops them.
	for _, j := range []ingest.Job{v1, v3} {
		res := b.svc.Run(ctx, j)
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Superseded, res.Outcome, "a pruned older version must not become current")
		require.Equal(t, before, currentOf(t, b))
		require.True(t, b.svc.Run(ctx, j).Outcome.Duplicate(), "and its next delivery is a duplicate again")
	}
	requireVerified(t, b)
}

// TestPruneKeepsSameOrderReplacedGeneration: a generation replaced by a
// repair (`--policy replace --if-match`, which carries the same version
// and so the same order token) is kept by prune whatever the policy: its
// source's current_order is not newer than its own, so its redelivery,
// without its ledger row, would be written again and replace the repair.
func TestPruneKeepsSameOrderReplacedGeneration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	bad := version(t, squares(t, "bad.geojson", 3, 0.001), "v1", "10", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, bad).Outcome)
	match := ingest.DefaultParams("parcels")
	match.Replaces = bad.ID
	repair := version(t, squares(t, "fixed.geojson", 6, 0.001), "v1", "10", match)
	require.Equal(t, ingest.Written, b.svc.Run(ctx, repair).Outcome)
	fixed := currentOf(t, b)
	require.Equal(t, repair.ID, fixed.Current)

	r, err := b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 0})
	require.NoError(t, err)
	require.Zero(t, r.Jobs)
	require.EqualValues(t, 1, r.KeptByOrder)

	res := b.svc.Run(ctx, bad)
	require.NoError(t, res.Err)
	require.True(t, res.Outcome.Duplicate(), "the replaced generation's redelivery is a duplicate, got %s", res.Outcome)
	require.Equal(t, fixed, currentOf(t, b))
	requireVerified(t, b)
}

// TestPruneDropsHashMarks: prune deletes the marks of the generations it
// deletes in geoingest_hashes_current (migration 0057), in the batch that
// deletes their ledger rows; the current generation's mark stays.
func TestPruneDropsHashMarks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var jobs []ingest.Job
	for i, n := range []int{1, 2, 3} {
		seq := []string{"10", "20", "30"}[i]
		j := version(t, squares(t, "v"+seq+".geojson", n, 0.001), "v"+seq, seq, ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Written, b.svc.Run(ctx, j).Outcome)
		jobs = append(jobs, j)
	}
	// Every generation marked, as a version's prefilter marks the one it
	// replaced when none of its rows holds an old-form hash.
	_, err := b.pool.Exec(ctx, `INSERT INTO geoingest_hashes_current (job_ref) SELECT job_ref FROM jobs ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	ref := map[string]int64{}
	for _, j := range jobs {
		var r int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT job_ref FROM jobs WHERE job_id = $1`, j.ID).Scan(&r))
		ref[j.ID] = r
	}
	marked := func(id string) bool {
		var ok bool
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM geoingest_hashes_current WHERE job_ref = $1)`, ref[id]).Scan(&ok))
		return ok
	}

	r, err := b.store.Prune(ctx, ingest.RetentionPolicy{KeepSuperseded: 0, Batch: 1})
	require.NoError(t, err)
	require.EqualValues(t, 2, r.Jobs)
	require.False(t, marked(jobs[0].ID), "a pruned job_ref keeps no mark")
	require.False(t, marked(jobs[1].ID), "a pruned job_ref keeps no mark")
	require.True(t, marked(jobs[2].ID), "the current generation keeps its mark")
	var n int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_hashes_current h
		WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.job_ref = h.job_ref)`).Scan(&n))
	require.Zero(t, n, "no mark outlives its job")
	requireVerified(t, b)
}
