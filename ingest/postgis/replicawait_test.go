package postgis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestDurableAckWithoutAStandby: the durable acknowledgement
// (RequireReplicas) on a server that no standby streams from. A job's
// write gate commits, then waits for a standby that never comes: the
// delivery ends Transient with a NotReplicatedError carrying what the gate
// did (Written), and the job is committed (its next delivery is a
// duplicate). Each later delivery, a duplicate at the claim gate or at the
// write gate, waits the same way and is not reported done either. With
// the wait off, the duplicate is done at once. A job the server's ledger
// lacks is not waited for: AwaitReplicas says so (Transient). The
// session's role (a superuser) may read the positions; none streams.
func TestDurableAckWithoutAStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDB(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := newTestService(pool, metrics, nil)
	svc.NoReportRefresh = true
	store := svc.Store.(*Store)
	canRead, streaming, err := store.ReplicationStatus(ctx)
	require.NoError(t, err)
	require.True(t, canRead)
	require.Zero(t, streaming)

	store.RequireReplicas(ingest.ReplicaWait{Replicas: 1, Timeout: 300 * time.Millisecond})
	svc.Durable = store
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	notReplicated := func(res ingest.Result) *ingest.NotReplicatedError {
		t.Helper()
		require.Equal(t, ingest.Failed, res.Outcome)
		require.Equal(t, ingest.Transient, ingest.KindOf(res.Err), "%v", res.Err)
		nr, ok := errors.AsType[*ingest.NotReplicatedError](res.Err)
		require.True(t, ok, "%v", res.Err)
		require.Equal(t, 1, nr.Want)
		require.Zero(t, nr.Have)
		require.ErrorIs(t, nr, ingest.ErrReplicaTimeout)
		require.GreaterOrEqual(t, nr.Waited, 300*time.Millisecond)
		require.NotEmpty(t, nr.LSN)
		return nr
	}
	nr := notReplicated(svc.Run(ctx, job))
	require.Equal(t, ingest.Written, nr.Result.Outcome, "the gate wrote the job; only its ack waits")
	require.EqualValues(t, 1, state(t, pool).Jobs, "committed")
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.WriteGate.WithLabelValues("written")))
	require.Zero(t, testutil.ToFloat64(metrics.JobsFailed.WithLabelValues("transient")), "not a failed attempt: nothing is released or recorded")
	var claim string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM claims WHERE job_id = $1`, job.ID).Scan(&claim))
	require.Equal(t, "COMMITTED", claim)

	// The redelivery: a duplicate at the claim gate, which waits too.
	notReplicated(svc.Run(ctx, job))
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.Claims.WithLabelValues("duplicate")))
	// The write gate alone (a duplicate there) waits too.
	in, err := job.Fetch.Fetch(ctx, t.TempDir())
	require.NoError(t, err)
	r, err := openLocal(in.Path)
	require.NoError(t, err)
	defer r.Close()
	_, err = store.Write(ctx, job, "another-worker", ingest.LogLayers(r), in)
	nr, ok := errors.AsType[*ingest.NotReplicatedError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, ingest.AlreadyPresent, nr.Result.Outcome)
	require.EqualValues(t, 2, testutil.ToFloat64(metrics.ReplicaWaitsFailed), "the service's two deliveries")

	// A job this server's ledger lacks is not a duplicate here.
	err = store.AwaitReplicas(ctx, "no-such-job")
	require.Error(t, err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err))
	_, ok = errors.AsType[*ingest.NotReplicatedError](err)
	require.False(t, ok, "%v", err)

	// Off: the duplicate is done at once.
	store.RequireReplicas(ingest.ReplicaWait{})
	res := svc.Run(ctx, job)
	require.Equal(t, ingest.AlreadyPresent, res.Outcome, "%v", res.Err)
	require.EqualValues(t, 1, state(t, pool).Jobs)
}
