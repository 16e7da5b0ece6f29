package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestJobAgainstCurrent: one small read gives a job's status and content
// hash beside its source's current generation's (what `ingest` needs for
// a file already present), and ErrNoSuchJob for a job not in the ledger.
func TestJobAgainstCurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v1 := version(t, squares(t, "v1.geojson", 2, 0.001), "v1", "10", ingest.DefaultParams("parcels"))
	v2 := version(t, squares(t, "v2.geojson", 3, 0.001), "v2", "20", ingest.DefaultParams("parcels"))
	for _, j := range []ingest.Job{v1, v2} {
		require.Equal(t, ingest.Written, b.svc.Run(ctx, j).Outcome)
	}
	hash := func(id string) (h string) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT content_hash FROM jobs WHERE job_id = $1`, id).Scan(&h))
		return h
	}
	old, err := b.store.JobAgainstCurrent(ctx, v1.ID)
	require.NoError(t, err)
	require.Equal(t, JobVersusCurrent{Status: "replaced", ContentHash: hash(v1.ID), CurrentJob: v2.ID, CurrentContentHash: hash(v2.ID)}, old)
	require.NotEqual(t, old.ContentHash, old.CurrentContentHash)
	cur, err := b.store.JobAgainstCurrent(ctx, v2.ID)
	require.NoError(t, err)
	require.Equal(t, JobVersusCurrent{Status: "current", ContentHash: hash(v2.ID), CurrentJob: v2.ID, CurrentContentHash: hash(v2.ID)}, cur)
	_, err = b.store.JobAgainstCurrent(ctx, "0123456789abcdef")
	require.ErrorIs(t, err, ingest.ErrNoSuchJob)
}
