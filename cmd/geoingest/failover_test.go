package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/stretchr/testify/require"
)

// TestServeFollowsThePrimary: `serve` runs on the multi-host URL of a
// pg_auto_failover formation (primary and synchronous standby) while the
// primary fails over twice in the middle of jobs: once planned (`pg_autoctl
// perform failover`), once by a crash of the primary's machine (SIGKILL of
// its postmaster and keeper). serve reconnects to the new primary with no
// operator action, the jobs the failovers cut are retried within seconds
// (not after their 5-minute lease: a claim its own cut attempt could not
// release is taken back at once), and every job ends committed exactly
// once: verify clean, nothing dead-lettered, no permanent failure. serve
// runs with --ack-replicas 1: no job is acked before the standby has its
// commit, so that a failover while the primary does not wait for the
// standby (wait_primary) cannot lose an acked job.
func TestServeFollowsThePrimary(t *testing.T) {
	t.Parallel()
	hc := hatest.Shared(t, hatest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// A failure shows the formation's history: a job committed and then
	// missing after the crash's promotion would point at a primary that
	// was not waiting for its standby (wait_primary) when it was killed.
	began := time.Now()
	t.Cleanup(func() {
		ev, err := hc.Events(context.Background(), began)
		switch {
		case t.Failed():
			t.Logf("the monitor's events since the test began (err %v):\n%s", err, ev)
		case err != nil:
			t.Errorf("the monitor's events: %v", err)
		}
	})
	c := newCrashEnv(t, "failover")
	c.db = hc.URL()
	big := "../../testdata/synthetic/parcels_10k.geojson"
	var objs []object
	for i := 0; i < 4; i++ {
		objs = append(objs, upload(t, c.s3.Client, c.bucket, fmt.Sprintf("parcels/big%d.geojson", i), big, i+1))
	}
	for i := 0; i < 6; i++ {
		objs = append(objs, upload(t, c.s3.Client, c.bucket, fmt.Sprintf("parcels/small%d.geojson", i), squaresFile(t, 10+i), 10+i))
	}
	// A visibility of 60 s (renewed every 20 s) rather than 10 s: the
	// failovers cut jobs, whose messages come back by nack (--backoff),
	// never by a lapsed visibility. A 10 s visibility could lapse on a
	// loaded machine while a job still ran; the copy delivered then finds
	// the claim held by a live attempt and is kept back until that lease
	// ends (5 min), after the job has committed, which is not what this
	// test is about.
	// --ack-replicas 1: a commit is acked once the standby has flushed it.
	// The monitor's fast detection (and a loaded machine) can put the
	// primary in wait_primary, where it does not wait for the standby,
	// just before the planned failover: a job committed then exists only
	// on the primary that the failover demotes and rewinds (CI lost two
	// acked jobs so). Its message must come back, not be acked.
	w := c.serve(t, nil, "--metrics-addr", "127.0.0.1:0", "--workers", "3", "--ack-replicas", "1",
		"--visibility", "60s", "--backoff", "1s", "--backoff-max", "4s")
	addr := w.httpAddr(t)
	eventually(t, 60*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })
	inFlight := func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`) > 0
	}

	// A planned failover with the first big jobs in flight.
	for _, o := range objs[:2] {
		sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	}
	eventually(t, 60*time.Second, "jobs in flight", inFlight)
	at := time.Now()
	primary, err := hc.Failover(ctx)
	require.NoError(t, err)
	t.Logf("planned failover: %s is primary %.1fs after the command", primary.Name, time.Since(at).Seconds())
	for _, o := range objs[4:7] {
		sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	}
	eventually(t, 30*time.Second, "serve working again within 30 s of the promotion", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE committed_at > $1`, at) > 0
	})
	t.Logf("first commit on the new primary %.1fs after the failover began", time.Since(at).Seconds())
	require.NoError(t, hc.WaitHealthy(ctx))

	// A crash of the primary's machine with the other big jobs in flight.
	for _, o := range append(objs[2:4], objs[7:]...) {
		sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	}
	eventually(t, 60*time.Second, "jobs in flight", inFlight)
	if st, err := hc.States(ctx); err == nil {
		t.Logf("the formation before the crash: %+v", st)
	}
	at = time.Now()
	killed, err := hc.KillPrimary(ctx)
	require.NoError(t, err)
	primary, err = hc.WaitPrimary(ctx, killed)
	require.NoError(t, err)
	promoted := time.Since(at)
	// With --ack-replicas 1 a job committed on the new primary is acked
	// once a standby has it: the killed node rejoins as its standby (a
	// machine restarted), as an operator's would.
	require.NoError(t, hc.Rejoin(ctx, killed))
	rejoined := time.Since(at)
	var said time.Time
	eventually(t, 120*time.Second, "every job committed and the queue drained", func() bool {
		current, depth := queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`), sqsDepth(t, c.sqs.Client, c.queueURL)
		if time.Since(said) > 20*time.Second { // which of the two a timeout waited for
			t.Logf("%.0fs after the SIGKILL: %d of %d jobs current, %d messages in the queue (visible, in flight or delayed)",
				time.Since(at).Seconds(), current, len(objs), depth)
			said = time.Now()
		}
		return current == int64(len(objs)) && depth == 0
	})
	t.Logf("crash: %s promoted %.1fs after the SIGKILL, %s rejoined as its standby after %.1fs; every job committed and acked %.1fs after it (lease 5m)",
		primary.Name, promoted.Seconds(), killed.Name, rejoined.Seconds(), time.Since(at).Seconds())
	require.Less(t, time.Since(at), 3*time.Minute, "no job waited for its lease")

	transient := metricOf(t, addr, `geoingest_jobs_failed_total{kind="transient"}`)
	reclaimed := metricOf(t, addr, `geoingest_claims_total{result="reclaimed"}`)
	require.Zero(t, metricOf(t, addr, `geoingest_jobs_failed_total{kind="permanent"}`), "a failover is never a permanent failure")
	require.Zero(t, metricOf(t, addr, "geoingest_messages_dead_lettered_total"))
	t.Logf("transient failures %v, own dead attempts taken back %v, held %v; --ack-replicas: %v deliveries not confirmed (given back), %v waits of %.1f ms on average",
		transient, reclaimed, metricOf(t, addr, `geoingest_claims_total{result="held"}`),
		metricOf(t, addr, "geoingest_ack_replicas_not_confirmed_total"), metricOf(t, addr, "geoingest_ack_replicas_wait_seconds_count"),
		1000*metricOf(t, addr, "geoingest_ack_replicas_wait_seconds_sum")/max(metricOf(t, addr, "geoingest_ack_replicas_wait_seconds_count"), 1))
	out := w.stop(t)
	require.False(t, strings.Contains(out, "panic"), out)

	require.EqualValues(t, len(objs), queryInt(t, c.db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, len(objs), queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'COMMITTED'`))
	require.EqualValues(t, 4*10000+10+11+12+13+14+15, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM (SELECT 1 FROM parcels GROUP BY job_ref, feature_index HAVING count(*) > 1) d`))
	code, vout, verr := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, vout+verr)
	require.Zero(t, sqsDepth(t, c.sqs.Client, c.dlqURL), "nothing dead-lettered")
}

// TestServeStartsDuringAFailover: a serve started while no server accepts
// connections (a failover in progress: here the database is cut behind a
// proxy) does not exit: it retries within --start-timeout and comes up,
// ready, once the database answers, then runs jobs.
func TestServeStartsDuringAFailover(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "startfailover")
	proxy := newDBProxy(t, c.db)
	proxy.Cut()
	w := c.serve(t, nil, "--database-url", proxy.URL, "--metrics-addr", "127.0.0.1:0", "--start-timeout", "60s")
	time.Sleep(4 * time.Second)
	// Its retry is said however long a loaded machine takes to start
	// serve (a fixed 4 s wait for the line raced that start), and serve is
	// still running once it has said it.
	eventually(t, 30*time.Second, "serve to say it retries the database", func() bool {
		return strings.Contains(w.stderr.String(), "database not reachable at start-up; retrying")
	})
	select {
	case <-w.exited:
		t.Fatalf("serve exited while the database was unreachable:\n%s", w.stderr.String())
	default:
	}
	proxy.Restore()
	addr := w.httpAddr(t) // serve listens once the database is open
	eventually(t, 30*time.Second, "serve ready once the database answers", func() bool { return readyz(addr) == http.StatusOK })
	o := upload(t, c.s3.Client, c.bucket, "parcels/after.geojson", squaresFile(t, 3), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	eventually(t, 60*time.Second, "the job committed", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 1
	})
	w.stop(t)
}
