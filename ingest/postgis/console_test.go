package postgis

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestConsoleClaimHistory: a job's claim history records every change an
// operator needs, through the Store's own claim-gate calls, and nothing
// for heartbeats: claimed, released after a transient failure, taken by
// another worker, failed, re-run, released again, then committed by the
// write gate.
func TestConsoleClaimHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	claim := func(owner string) {
		t.Helper()
		st, err := b.store.Claim(ctx, job, owner, time.Minute)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, st.Result, owner)
	}
	claim("A")
	for range 3 {
		ok, err := b.store.Heartbeat(ctx, job.ID, "A", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, b.store.Release(ctx, job.ID, "A", "database unavailable"))
	claim("B")
	require.NoError(t, b.store.Fail(ctx, job.ID, "bad file", ""))
	claim("C")
	require.NoError(t, b.store.Release(ctx, job.ID, "C", "object store throttling"))
	res := b.svc.Run(ctx, job)
	require.NoError(t, res.Err)

	rec, err := NewConsole(b.pool).ConsoleJob(ctx, job.ID)
	require.NoError(t, err)
	type ev struct {
		Event, Owner string
		Attempt      int32
		Error        string
	}
	var got []ev
	for _, e := range rec.Claim.History {
		got = append(got, ev{e.Event, e.Owner, e.Attempt, e.Error})
		require.False(t, e.At.IsZero())
	}
	owner := rec.Claim.Owner
	require.NotContains(t, []string{"A", "B", "C"}, owner)
	require.Equal(t, []ev{
		{"claimed", "A", 1, ""},
		{"released", "A", 1, "database unavailable"},
		{"claimed", "B", 2, "database unavailable"},
		{"failed", "B", 2, "bad file"},
		{"claimed", "C", 3, "bad file"},
		{"released", "C", 3, "object store throttling"},
		{"claimed", owner, 4, "object store throttling"},
		{"committed", owner, 4, ""},
	}, got)
	require.Equal(t, "current", rec.Job.State)
	require.NotNil(t, rec.Job.WriteSeconds)
	require.NotNil(t, rec.Ledger)
	require.Len(t, rec.SourceHistory, 1)

	_, err = NewConsole(b.pool).ConsoleJob(ctx, "nobody")
	require.ErrorIs(t, err, ingest.ErrNoSuchJob)
}

// TestConsoleHintReadsTheCause: the console's hint follows the cause the
// failing code set and the claim recorded (migration 0038), not the words
// of the reason: a null geometry under the policy fail is told to skip
// them; a failure with no cause whose words name a CRS is told to fix the
// file; a failure recorded before the causes were (failure_cause NULL)
// is still read from its words.
func TestConsoleHintReadsTheCause(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.NullGeometry = ingest.PolicyFail
	path := filepath.Join(t.TempDir(), "nulls.geojson")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":null}]}`), 0o644))
	job := localJob(t, path, p)
	res := b.svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.CauseNullGeometry, ingest.CauseOf(res.Err))
	console := NewConsole(b.pool)
	rec, err := console.ConsoleJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, ingest.CauseNullGeometry, rec.Job.Cause)
	require.Contains(t, rec.Job.Hint, "null-geometry=skip")

	other := localJob(t, epinay, ingest.DefaultParams("parcels"))
	st, err := b.store.Claim(ctx, other, "A", time.Minute)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, st.Result)
	require.NoError(t, b.store.Fail(ctx, other.ID, "feature 2: invalid geometry: unknown CRS in its words only", ""))
	rec, err = console.ConsoleJob(ctx, other.ID)
	require.NoError(t, err)
	require.Empty(t, rec.Job.Cause)
	require.Contains(t, rec.Job.Hint, "Fix the file", "no cause: the words are not read")

	_, err = b.pool.Exec(ctx, `UPDATE claims SET failure_cause = NULL WHERE job_id = $1`, other.ID)
	require.NoError(t, err)
	page, err := console.ConsoleJobs(ctx, ingest.JobQuery{State: ingest.StateFailed})
	require.NoError(t, err)
	hints := map[string]string{}
	for _, j := range page.Jobs {
		hints[j.JobID] = j.Hint
	}
	require.Contains(t, hints[other.ID], "source-srid", "a failure recorded before its cause is read from its words")
	require.Contains(t, hints[job.ID], "null-geometry=skip")
}
