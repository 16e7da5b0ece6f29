package postgis

import (
	"context"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestJobIDsWithPrefix: the ids of claims and ledger rows that start with
// a prefix, each once, in order, at most the limit; the prefix's
// characters are only compared, never matched as a pattern.
func TestJobIDsWithPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	require.NoError(t, b.svc.Run(ctx, job).Err) // a claim and a ledger row
	p := "0123456789ab"
	ids := []string{p + strings.Repeat("2", 52), p + strings.Repeat("0", 52), p + strings.Repeat("1", 52), "0123456789ac" + strings.Repeat("0", 52)}
	for _, id := range ids {
		_, err := b.pool.Exec(ctx, `INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
			VALUES ($1, 'FAILED', 'test', now(), 'b', 'k')`, id)
		require.NoError(t, err)
	}
	c := NewConsole(b.pool)
	list := func(prefix string, limit int) []string {
		t.Helper()
		got, err := c.JobIDsWithPrefix(ctx, prefix, limit)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []string{ids[1], ids[2], ids[0]}, list(p, 10))
	require.Equal(t, []string{ids[1], ids[2]}, list(p, 2))
	require.Equal(t, []string{ids[1], ids[2], ids[0], ids[3]}, list("0123456789a", 10))
	require.Equal(t, []string{job.ID}, list(job.ID[:12], 10), "a claim and its ledger row are one job")
	require.Equal(t, []string{job.ID}, list(job.ID, 10))
	require.Empty(t, list(p+"3", 10))
	for _, pattern := range []string{"%", "0123456789a_", `0123456789ab\`, ".*", "0123456789AB"} {
		require.Empty(t, list(pattern, 10), pattern)
	}

	r, err := ingest.ResolveJobID(ctx, b.store, job.ID[:12])
	require.NoError(t, err)
	require.Equal(t, job.ID, r, "the Store resolves through its Console")
}
