package postgis

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// outageFetcher makes the job's database unreachable (pgtest.Outage, for
// down, on a goroutine whose end closes over), waits until it refuses
// connections, then fails the job transiently: the attempt's release of
// its claim then fails too, as it does for the attempt a failover cuts.
type outageFetcher struct {
	t    testing.TB
	url  string
	down time.Duration
	over chan error
}

func (f outageFetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	cut, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		f.over <- pgtest.OutageCut(context.Background(), f.t, f.url, f.down, func() { close(cut) })
	}()
	// New sessions are refused before the open ones are cut: wait for the
	// cut, or the pool's idle session could still release the claim. (An
	// outage that failed ends early; the test reads its error from over.)
	select {
	case <-cut:
	case <-ended:
	case <-ctx.Done():
		return ingest.Fetched{}, ctx.Err()
	}
	return ingest.Fetched{}, ingest.Transientf("connection to the object store reset (test)")
}

// TestOwnDeadAttemptIsTakenBack: an attempt that fails while the database
// is unreachable cannot release its claim. Its worker's next delivery of
// the job takes that claim back at once and writes the job (it does not
// wait for the lease, an hour here), while another worker still finds the
// claim held; the job is written once.
func TestOwnDeadAttemptIsTakenBack(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	logs := &testfiles.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := ingest.NewService(NewStore(pool, metrics, log), metrics, log)
	svc.Lease = time.Hour
	ctx := context.Background()

	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	cut := job
	over := make(chan error, 1)
	cut.Fetch = outageFetcher{t: t, url: url, down: 2 * time.Second, over: over}
	res := svc.Run(ctx, cut)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Transient, ingest.KindOf(res.Err))
	require.NoError(t, <-over)
	require.Contains(t, logs.String(), "release claim failed")

	// The claim is still CLAIMED under the dead attempt, for an hour.
	var state, owner string
	var attempts int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT state, owner, attempts FROM claims WHERE job_id = $1`, job.ID).Scan(&state, &owner, &attempts))
	require.Equal(t, "CLAIMED", state)
	require.Equal(t, svc.Owner, owner)

	// Another worker cannot know that attempt has ended: held.
	other := ingest.NewService(svc.Store, metrics, log)
	other.Lease = time.Hour
	held := other.Run(ctx, job)
	require.Equal(t, ingest.Held, held.Outcome)
	require.Greater(t, held.RetryAfter, 50*time.Minute)

	// Its own worker takes it back and writes the job now.
	again := svc.Run(ctx, job)
	require.Equal(t, ingest.Written, again.Outcome, "%v", again.Err)
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.Claims.WithLabelValues("reclaimed")))
	require.NoError(t, pool.QueryRow(ctx, `SELECT state, attempts FROM claims WHERE job_id = $1`, job.ID).Scan(&state, &attempts))
	require.Equal(t, "COMMITTED", state)

	// And exactly once: a further delivery is a duplicate.
	require.Equal(t, ingest.AlreadyPresent, svc.Run(ctx, job).Outcome)
	var jobs int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE job_id = $1`, job.ID).Scan(&jobs))
	require.EqualValues(t, 1, jobs)
	require.True(t, strings.Contains(logs.String(), "took back the claim of this worker's own dead attempt"))
}

// TestReclaimTakesOnlyThatAttempt: Reclaim takes a claim back only from
// the attempt it names, under the owner that ran it: not a live attempt
// numbered otherwise, not another owner's claim, never a committed one.
func TestReclaimTakesOnlyThatAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	won, err := b.store.Claim(ctx, job, "w1", time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, won.Result)
	require.NotZero(t, won.Attempt)

	c, err := b.store.Reclaim(ctx, job, "w1", won.Attempt+1, time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimHeld, c.Result, "another attempt number")
	require.Equal(t, won.Attempt, c.Attempt)
	c, err = b.store.Reclaim(ctx, job, "w2", won.Attempt, time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimHeld, c.Result, "another owner")
	require.Equal(t, "w1", c.Owner)

	c, err = b.store.Reclaim(ctx, job, "w1", won.Attempt, time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, c.Result)
	require.Equal(t, won.Attempt+1, c.Attempt)
	c, err = b.store.Reclaim(ctx, job, "w1", won.Attempt, time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimHeld, c.Result, "the old number is spent")

	res := b.svc.Run(ctx, job) // b.svc's own owner: held by w1's new attempt
	require.Equal(t, ingest.Held, res.Outcome)
}

// lostClaimAck is the Store with the claim gate's answer lost once: the
// claim statement runs on the server, and the worker sees an error (the
// connection cut after it ran, as in a failover).
type lostClaimAck struct {
	*Store
	lose, releaseLost bool
}

// Release fails once after the lost answer: the database is still away.
func (l *lostClaimAck) Release(ctx context.Context, jobID, owner, reason string) error {
	if l.releaseLost {
		l.releaseLost = false
		return ingest.Transientf("release %s: connection refused (test)", jobID)
	}
	return l.Store.Release(ctx, jobID, owner, reason)
}

func (l *lostClaimAck) Claim(ctx context.Context, job ingest.Job, owner string, lease time.Duration) (ingest.ClaimStatus, error) {
	st, err := l.Store.Claim(ctx, job, owner, lease)
	if l.lose && err == nil {
		l.lose, l.releaseLost = false, true
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("claim %s: unexpected EOF (test: the answer was lost)", job.ID)
	}
	return st, err
}

// TestLostClaimAnswerIsTakenBack: the claim gate's own lost
// acknowledgement leaves a claim in the worker's name under a number it
// never heard. Its next delivery takes it back at once (no other attempt
// of it is in progress), where another worker waits for the lease.
func TestLostClaimAnswerIsTakenBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	store := &lostClaimAck{Store: b.store, lose: true}
	svc := ingest.NewService(store, b.metrics, nil)
	svc.Lease = time.Hour
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	res := svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Transient, ingest.KindOf(res.Err))
	var owner string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT owner FROM claims WHERE job_id = $1 AND state = 'CLAIMED'`, job.ID).Scan(&owner))
	require.Equal(t, svc.Owner, owner, "the lost statement took the claim")

	other := ingest.NewService(b.store, b.metrics, nil)
	require.Equal(t, ingest.Held, other.Run(ctx, job).Outcome)
	again := svc.Run(ctx, job)
	require.Equal(t, ingest.Written, again.Outcome, "%v", again.Err)
}
