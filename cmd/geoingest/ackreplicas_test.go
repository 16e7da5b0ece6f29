package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/stretchr/testify/require"
)

// TestServeAcksOnlyWhatTheStandbyHas: `serve --ack-replicas 1` on an
// asynchronous pair (a primary that does not wait for its standby: what
// pg_auto_failover's wait_primary makes of a synchronous pair too). The
// primary's WAL sender is held (SIGSTOP), so that a job's commit, which
// the primary acknowledges, does not reach the standby: the job is
// committed on the primary, but its message is NOT acked; each delivery
// waits (--ack-replicas-timeout), is given back, and comes back as a
// duplicate that waits again. Then the primary's machine crashes and the
// standby, without the commit, is promoted: the message, never acked,
// comes back and writes the job on the new primary, and is acked once the
// old primary has rejoined as its standby and flushed it. Every job ends
// committed once, nothing dead-lettered. With --ack-replicas 0 the
// message is acked at the commit and the crash loses the job for good
// (TestAsyncFailoverLossIsFoundAndRepaired shows the loss).
func TestServeAcksOnlyWhatTheStandbyHas(t *testing.T) {
	t.Parallel()
	hc := hatest.Shared(t, hatest.Options{Async: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newCrashEnv(t, "ackreplicas")
	c.db = hc.URL()
	standby := hc.ReadURL()
	w := c.serve(t, nil, "--metrics-addr", "127.0.0.1:0", "--ack-replicas", "1", "--ack-replicas-timeout", "2s",
		"--visibility", "30s", "--backoff", "1s", "--backoff-max", "2s")
	addr := w.httpAddr(t)
	eventually(t, 60*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })

	// A healthy standby: the job is acked once the standby has it.
	first := upload(t, c.s3.Client, c.bucket, "parcels/first.geojson", squaresFile(t, 5), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, first))
	eventually(t, 60*time.Second, "the first job committed and acked", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 1 && sqsDepth(t, c.sqs.Client, c.queueURL) == 0
	})
	require.EqualValues(t, 1, queryInt(t, standby, `SELECT count(*) FROM jobs`), "acked: the standby has it")
	require.Positive(t, metricOf(t, addr, "geoingest_ack_replicas_wait_seconds_count"))

	// Hold the primary's WAL sender; the second job commits on the
	// primary only.
	sender := int(queryInt(t, c.db, `SELECT pid FROM pg_stat_replication`))
	require.NoError(t, syscall.Kill(sender, syscall.SIGSTOP))
	defer func() { _ = syscall.Kill(sender, syscall.SIGKILL) }()
	second := upload(t, c.s3.Client, c.bucket, "parcels/second.geojson", squaresFile(t, 7), 2)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, second))
	eventually(t, 60*time.Second, "the second job committed on the primary", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 2
	})
	eventually(t, 60*time.Second, "a redelivery that found the job committed and waited again", func() bool {
		return metricOf(t, addr, "geoingest_ack_replicas_not_confirmed_total") >= 2 &&
			metricOf(t, addr, `geoingest_claims_total{result="duplicate"}`) >= 1
	})
	require.Equal(t, 1, sqsDepth(t, c.sqs.Client, c.queueURL), "committed on the primary only: the message is not acked")
	require.Contains(t, w.stderr.String(), "commit not yet on the standbys; message given back")
	require.EqualValues(t, 1, queryInt(t, standby, `SELECT count(*) FROM jobs`), "the standby lacks the second job")

	// The primary's machine crashes; the standby is promoted without the
	// second job, whose message comes back and writes it there. Until the
	// old primary rejoins as the new one's standby, no standby has it:
	// still not acked.
	killed, err := hc.KillPrimary(ctx)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(sender, syscall.SIGKILL)) // held, it would not see its postmaster die
	promoted, err := hc.WaitPrimary(ctx, killed)
	require.NoError(t, err)
	t.Logf("%s promoted", promoted.Name)
	eventually(t, 120*time.Second, "the second job written again on the new primary", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 2
	})
	require.Equal(t, 1, sqsDepth(t, c.sqs.Client, c.queueURL), "no standby has it: not acked")
	require.NoError(t, hc.Rejoin(ctx, killed))
	eventually(t, 120*time.Second, "the message acked once the rejoined standby has the job", func() bool {
		return sqsDepth(t, c.sqs.Client, c.queueURL) == 0
	})
	require.Zero(t, metricOf(t, addr, `geoingest_jobs_failed_total{kind="permanent"}`))
	require.Zero(t, metricOf(t, addr, "geoingest_messages_dead_lettered_total"))
	out := w.stop(t)
	require.False(t, strings.Contains(out, "panic"), out)
	require.EqualValues(t, 2, queryInt(t, c.db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 5+7, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	code, vout, verr := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, vout+verr)
	require.Zero(t, sqsDepth(t, c.sqs.Client, c.dlqURL))
}
