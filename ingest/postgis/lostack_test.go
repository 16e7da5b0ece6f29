package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgproxy"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestLostCommitAcknowledgement is the classic failover case: the write
// gate's COMMIT is executed by the server, but the connection dies before
// its acknowledgement reaches the worker (internal/testsupport/pgproxy loses it). The
// worker sees a transient error, as for any cut transaction, and the job
// is retried. The retry meets the job's own committed rows: the claim
// gate answers committed (the claim is committed in the same transaction)
// and the write gate alone, asked again, finds the job's ledger row and
// reports already-present. Nothing is written twice and nothing is lost.
func TestLostCommitAcknowledgement(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	proxy, err := pgproxy.Start(url)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	pool, err := pgxpool.New(context.Background(), proxy.URL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := newTestService(pool, metrics, nil)
	svc.NoReportRefresh = true
	store := svc.Store.(*Store)
	ctx := context.Background()
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))

	proxy.LoseNextCommitAck()
	res := svc.Run(ctx, job)
	require.EqualValues(t, 1, proxy.Lost(), "the write gate's COMMIT went through the proxy")
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Transient, ingest.KindOf(res.Err), "a commit of unknown outcome is retried: %v", res.Err)
	require.Contains(t, res.Err.Error(), "commit")

	// The server did commit: the job is current with its features.
	direct, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer direct.Close()
	before := state(t, direct)
	require.EqualValues(t, 1, before.Jobs)
	require.Positive(t, before.Parcels)

	// The retry (the pool reconnects) is a duplicate at the claim gate...
	again := svc.Run(ctx, job)
	require.Equal(t, ingest.AlreadyPresent, again.Outcome, "%v", again.Err)
	// ...and at the write gate alone, which is what holds when every
	// other assumption has failed (a stolen lease, a claim row lost).
	in, err := job.Fetch.Fetch(ctx, t.TempDir())
	require.NoError(t, err)
	r, err := openLocal(in.Path)
	require.NoError(t, err)
	defer r.Close()
	wr, err := store.Write(ctx, job, "another-worker", ingest.LogLayers(r), in)
	require.NoError(t, err)
	require.Equal(t, ingest.AlreadyPresent, wr.Outcome)
	require.Equal(t, before, state(t, direct), "the retries changed nothing")
}
