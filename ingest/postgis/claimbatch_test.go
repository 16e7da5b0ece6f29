package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestClaimBatch takes the claim gate for a batch in one statement: new
// jobs are won (a job twice in the batch once), a committed job is a
// duplicate that RunClaimed stops with no download, a job under another
// worker's live lease is held; and a won job runs to the ledger.
func TestClaimBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	job := func(name string) ingest.Job {
		path := filepath.Join(dir, name+".geojson")
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{"type":"Feature","properties":{"name":%q},
			"geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]}}`, name)), 0o644))
		return localJob(t, path, ingest.DefaultParams("parcels"))
	}
	a, c, committed, held := job("a"), job("c"), job("committed"), job("held")
	require.Equal(t, ingest.Written, b.svc.Run(ctx, committed).Outcome)
	other, err := b.svc.Store.Claim(ctx, held, "another-worker", time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, other.Result)

	got, err := b.svc.ClaimBatch(ctx, []ingest.Job{a, c, a, committed, held})
	require.NoError(t, err)
	require.Equal(t, []ingest.ClaimResult{ingest.ClaimWon, ingest.ClaimWon, ingest.ClaimHeld, ingest.ClaimCommitted, ingest.ClaimHeld}, got)

	// Claimed again (another delivery of the same batch): nothing is won.
	again, err := b.svc.ClaimBatch(ctx, []ingest.Job{a, committed})
	require.NoError(t, err)
	require.Equal(t, []ingest.ClaimResult{ingest.ClaimHeld, ingest.ClaimCommitted}, again)

	downloads := testutil.ToFloat64(b.metrics.Downloads)
	dup := b.svc.RunClaimed(ctx, committed, got[3])
	require.Equal(t, ingest.AlreadyPresent, dup.Outcome)
	require.Equal(t, downloads, testutil.ToFloat64(b.metrics.Downloads), "a duplicate is stopped before any download")

	res := b.svc.RunClaimed(ctx, a, got[0])
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.EqualValues(t, 1, res.Features)
	var st string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT state FROM claims WHERE job_id = $1`, a.ID).Scan(&st))
	require.Equal(t, "COMMITTED", st)
}
