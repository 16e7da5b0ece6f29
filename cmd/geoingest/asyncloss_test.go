package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestAsyncFailoverLossIsFoundAndRepaired: what an asynchronous standby
// can lose, and how it is found and repaired (docs/failover.md, "the
// RPO"). The primary's WAL sender is held (SIGSTOP) so that a job's
// commit, acknowledged by the primary, does not reach the standby; then the
// primary's machine crashes and the standby is promoted. The job is gone
// with its ledger row and its claim, together: verify, which checks the
// database against itself, passes; `replay --job` of the lost job finds
// no such job; replaying the uploads (a redelivery) reports the lost one
// as a first delivery and writes it once, the other unchanged.
func TestAsyncFailoverLossIsFoundAndRepaired(t *testing.T) {
	t.Parallel()
	hc := hatest.Shared(t, hatest.Options{Async: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	url := hc.URL()
	env := map[string]string{"DATABASE_URL": url}
	a, b := squaresFile(t, 6), squaresFile(t, 4)
	code, out, errOut := run(t, env, "ingest", a)
	require.Equal(t, 0, code, out+errOut)
	standby := hc.ReadURL()
	eventually(t, 60*time.Second, "the standby has the first job", func() bool {
		return queryInt(t, standby, `SELECT count(*) FROM jobs`) == 1
	})

	// Hold the primary's WAL sender, then commit the second job.
	sender := int(queryInt(t, url, `SELECT pid FROM pg_stat_replication`))
	require.NoError(t, syscall.Kill(sender, syscall.SIGSTOP))
	defer func() { _ = syscall.Kill(sender, syscall.SIGKILL) }()
	code, out, errOut = run(t, env, "ingest", b)
	require.Equal(t, 0, code, out+errOut)
	var lostJob string
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, `SELECT job_id FROM jobs WHERE source_key LIKE '%sq4.geojson'`).Scan(&lostJob))
	var behind int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)), 0)::bigint FROM pg_stat_replication`).Scan(&behind))
	conn.Close(ctx)
	t.Logf("the primary acknowledged job %s; the standby is %d bytes of WAL behind", lostJob[:12], behind)
	require.Positive(t, behind)

	killed, err := hc.KillPrimary(ctx)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(sender, syscall.SIGKILL)) // held, it would not see its postmaster die
	promoted, err := hc.WaitPrimary(ctx, killed)
	require.NoError(t, err)
	t.Logf("%s promoted", promoted.Name)

	// Lost: the job, its ledger row and its claim, together.
	require.EqualValues(t, 1, queryInt(t, url, `SELECT count(*) FROM jobs`))
	require.Zero(t, queryInt(t, url, `SELECT count(*) FROM claims WHERE job_id = $1`, lostJob))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, "verify checks the database against itself: consistent, the loss is not in it\n"+out+errOut)
	code, out, errOut = run(t, env, "replay", "--job", lostJob)
	require.NotEqual(t, 0, code, "replay of the lost job finds no such job")
	t.Logf("replay --job of the lost job: %s%s", out, errOut)

	// The redelivery (replay of the uploads) writes it once.
	code, out, errOut = run(t, env, "replay", a, b)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, lostJob+"  file://"+b+"  first delivery: written")
	require.Contains(t, out, "unchanged")
	require.EqualValues(t, 2, queryInt(t, url, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 10, queryInt(t, url, `SELECT count(*) FROM parcels`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}
