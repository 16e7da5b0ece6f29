package chaos

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

var (
	flagFailovers = flag.Int("chaos.failovers", -1, "primary failovers during the chaos, on a pg_auto_failover pair (postgistest/hatest) instead of the one PostgreSQL restart: planned ones (pg_autoctl perform failover) and crashes of the primary (SIGKILL of its postmaster and keeper), alternately (default 0; 12 with -chaos.long when pg_autoctl is installed)")
	flagAsync     = flag.Bool("chaos.async", false, "with -chaos.failovers: an asynchronous standby (a crash of the primary loses the commits the standby did not have: see docs/failover.md); the run measures what each crash lost, finds what is missing after the drain and redelivers every notification once to repair it; default synchronous")
	flagAsyncLag  = flag.Duration("chaos.async-lag", 2*time.Second, "with -chaos.async: before each crash of the primary, its WAL sender is stopped this long (a standby that far behind, as a slow link makes it), so that the crash loses the commits of that window")
)

// failoverCount is the run's number of failovers.
func failoverCount() int {
	if *flagFailovers >= 0 {
		return *flagFailovers
	}
	if _, err := exec.LookPath("pg_autoctl"); *flagLong && err == nil {
		return 12
	}
	return 0
}

// failoverDB starts the formation of a run with failovers and returns
// its multi-host URL, which every serve, `geoingest compact` and the
// checks use.
//
// With an asynchronous standby, the monitor is told to promote it however
// far behind it is: pg_auto_failover by default promotes no standby more
// than 16 MB of WAL behind (pgautofailover.promote_wal_log_threshold,
// which bounds what a crash may lose at the cost of no automatic
// failover), and the run's stopped WAL sender leaves it further behind
// than that under a large job.
func failoverDB(t *testing.T) (*hatest.Cluster, string) {
	c := hatest.Start(t, hatest.Options{Async: *flagAsync})
	if *flagAsync {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, c.MonitorURL())
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "ALTER SYSTEM SET pgautofailover.promote_wal_log_threshold = 2147483647")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
		require.NoError(t, err)
	}
	return c, c.URL()
}

// failover is one failover of the run.
type failover struct {
	at, promoted, healthy time.Duration // since the start; to a writable primary; to a standby again
	planned               bool
	from, to              string
	// An asynchronous standby's crash: the WAL the standby had not
	// flushed at the crash, and the jobs committed on the primary that the
	// standby did not have (read on both just before the SIGKILL), and of
	// those, the ones the new primary indeed lacked after the promotion.
	behind     int64
	unreplied  []string
	lostJobIDs []string
}

// failovers fails the primary over cfg.failovers times, evenly from 10 %
// to 90 % of the chaos, alternately a planned failover and a crash of the
// primary's machine (whose node then rejoins as the standby), each with
// jobs in flight (the chaos never stops). A steal never runs across one
// (pgMu).
func (r *run) failovers(ctx context.Context) {
	n := r.cfg.failovers
	for i := 0; i < n; i++ {
		select {
		case <-time.After(time.Until(r.at(0.1 + 0.8*float64(i)/float64(n)))):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			r.pgErr = fmt.Errorf("the chaos ended after %d of %d failovers", i, n)
			return
		}
		f, err := r.failOnce(context.WithoutCancel(ctx), i%2 == 0)
		r.fo = append(r.fo, f)
		if err != nil {
			r.pgErr = fmt.Errorf("failover %d: %w", i+1, err)
			return
		}
	}
}

func (r *run) failOnce(ctx context.Context, planned bool) (failover, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	r.pgMu.Lock()
	f := failover{at: time.Since(r.start), planned: planned}
	t0 := time.Now()
	old, err := r.ha.Primary(ctx)
	if err != nil {
		r.pgMu.Unlock()
		return f, err
	}
	f.from = old.Name
	var to *hatest.Node
	var release func()
	if !planned && *flagAsync {
		release, err = r.lagStandby(ctx, old, &f)
		if err != nil {
			r.pgMu.Unlock()
			return f, err
		}
	}
	if planned {
		to, err = r.ha.Failover(ctx)
	} else if _, err = r.ha.KillPrimary(ctx); err == nil {
		if release != nil {
			release()
		}
		to, err = r.ha.WaitPrimary(ctx, old)
	}
	if err == nil && len(f.unreplied) > 0 {
		err = r.confirmLost(ctx, &f)
	}
	f.promoted = time.Since(t0)
	r.pgMu.Unlock()
	if err != nil {
		return f, err
	}
	f.to = to.Name
	if planned {
		err = r.ha.WaitHealthy(ctx)
	} else {
		err = r.ha.Rejoin(ctx, old)
	}
	f.healthy = time.Since(t0)
	return f, err
}

// lagStandby makes the asynchronous standby fall behind the primary old
// before its crash: it stops old's WAL sender for -chaos.async-lag while
// the serves go on committing, then reads the WAL the standby lacks and
// the jobs committed on the primary that the standby does not have. The
// caller SIGKILLs the primary at once, then calls release (which kills
// the stopped sender: stopped, it would not see its postmaster die).
func (r *run) lagStandby(ctx context.Context, old *hatest.Node, f *failover) (release func(), err error) {
	conn, err := pgx.Connect(ctx, r.ha.NodeURL(old))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pid FROM pg_stat_replication LIMIT 1`).Scan(&pid); err != nil {
		return nil, fmt.Errorf("the standby's WAL sender: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	release = func() { _ = syscall.Kill(pid, syscall.SIGKILL) }
	time.Sleep(*flagAsyncLag)
	var standby *hatest.Node
	for _, n := range r.ha.Nodes {
		if n != old {
			standby = n
		}
	}
	ids := func(url string) (map[string]bool, error) {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return nil, err
		}
		defer c.Close(context.WithoutCancel(ctx))
		rows, err := c.Query(ctx, `SELECT job_id FROM jobs`)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			out[id] = true
		}
		return out, rows.Err()
	}
	onStandby, err := ids(r.ha.NodeURL(standby))
	if err != nil {
		release()
		return nil, fmt.Errorf("the standby's jobs: %w", err)
	}
	onPrimary, err := ids(r.ha.NodeURL(old))
	if err != nil {
		release()
		return nil, fmt.Errorf("the primary's jobs: %w", err)
	}
	for id := range onPrimary {
		if !onStandby[id] {
			f.unreplied = append(f.unreplied, id)
		}
	}
	_ = conn.QueryRow(ctx, `SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)), 0)::bigint FROM pg_stat_replication`).Scan(&f.behind)
	return release, nil
}

// confirmLost reads which of the jobs the standby lacked at the crash the
// new primary lacks after the promotion: commits the failover lost,
// acknowledged to their workers, which acked their messages.
func (r *run) confirmLost(ctx context.Context, f *failover) error {
	conn, err := pgx.Connect(ctx, r.ha.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT id FROM unnest($1::text[]) id WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = id)`, f.unreplied)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		f.lostJobIDs = append(f.lostJobIDs, id)
	}
	return rows.Err()
}

// asyncRepair runs after the drain of a run on an asynchronous standby:
// it finds what the failovers lost and is still missing (the uploads'
// newest versions that are not current: the database alone cannot show
// it, so verify is run too, and passes), then redelivers every captured
// notification once, as an operator replays the bucket's events after
// such a failover (docs/failover.md), and drains again. The checks of the
// report then run on the repaired database.
func (r *run) asyncRepair(ctx context.Context, pool *pgxpool.Pool, c *sqs.Client, queueURL string) bool {
	t := r.t
	newest := map[string]*object{}
	for _, o := range r.plan {
		if p := newest[o.key]; p == nil || o.version > p.version {
			newest[o.key] = o
		}
	}
	current := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT s.source_key, j.version_token FROM sources s JOIN jobs j ON j.job_id = s.current_job_id WHERE s.source_bucket = 'uploads'`)
	require.NoError(t, err)
	for rows.Next() {
		var k, tok string
		require.NoError(t, rows.Scan(&k, &tok))
		current[k] = tok
	}
	require.NoError(t, rows.Err())
	var missing []string
	for _, k := range sortedKeys(newest) {
		if o := newest[k]; o.bad == "" && current[k] != o.etag {
			missing = append(missing, fmt.Sprintf("%s v%d", k, o.version))
		}
	}
	var lostIDs []string
	for _, f := range r.fo {
		lostIDs = append(lostIDs, f.lostJobIDs...)
	}
	var stillLost int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) id WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = id)`, lostIDs).Scan(&stillLost))
	// The commits the serves logged as written more than once: each a
	// commit a failover lost, written again by a later delivery.
	written := map[string]int{}
	_ = r.fleet.logLines(func(rec map[string]any, _ string) {
		if rec["msg"] == "job written" {
			if id, ok := rec["job"].(string); ok {
				written[id]++
			}
		}
	})
	rewritten := 0
	for _, n := range written {
		if n > 1 {
			rewritten++
		}
	}
	vcode := 0
	if err := exec.Command(binary, "verify", "--database-url", r.db).Run(); err != nil {
		vcode = -1
		if ee, ok := err.(*exec.ExitError); ok {
			vcode = ee.ExitCode()
		}
	}
	before := r.del.sentCount()
	for _, n := range r.hook.since(0) {
		if err := r.del.send(ctx, n); err != nil {
			t.Errorf("redelivery: %v", err)
			break
		}
	}
	redelivered := r.del.sentCount() - before
	drained := r.drain(ctx, c, queueURL)
	var repaired int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) id WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = id)`, lostIDs).Scan(&repaired))
	r.asyncNotes = append(r.asyncNotes,
		fmt.Sprintf("lost:           %d commits acknowledged by a primary and missing after its crash (read on both servers at the crash); %d job(s) logged \"job written\" twice (lost, then written again by a later delivery during the chaos)", len(lostIDs), rewritten),
		fmt.Sprintf("found:          after the drain %d of them still missing; %d uploads' newest versions not current (%s); geoingest verify exit %d (the database is consistent without them: it cannot see the loss)", stillLost, len(missing), strings.Join(firstOf(missing, 5), ", "), vcode),
		fmt.Sprintf("repaired:       every notification delivered once more (%d messages), drained (%v): %d of the %d lost commits present again; the checks below run after it", redelivered, drained, repaired, len(lostIDs)))
	return drained
}

// failoverReport is the report's line on the failovers.
func (r *run) failoverReport(p func(string, ...any)) {
	mode := "synchronous"
	if *flagAsync {
		mode = "asynchronous"
	}
	var planned, crashed int
	var worst, sum time.Duration
	var at []string
	for _, f := range r.fo {
		if f.planned {
			planned++
		} else {
			crashed++
		}
		worst, sum = max(worst, f.promoted), sum+f.promoted
		kind := "crash"
		if f.planned {
			kind = "planned"
		}
		at = append(at, fmt.Sprintf("%s %s %s→%s %.1fs", f.at.Round(time.Second), kind, f.from, f.to, f.promoted.Seconds()))
	}
	mean := time.Duration(0)
	if len(r.fo) > 0 {
		mean = sum / time.Duration(len(r.fo))
	}
	p("postgres:       %d failovers of a pg_auto_failover pair (%s standby): %d planned (pg_autoctl perform failover), %d crashes of the primary (SIGKILL of its postmaster and keeper, then rejoined); a writable primary again after %.1fs on average, %.1fs at worst",
		len(r.fo), mode, planned, crashed, mean.Seconds(), worst.Seconds())
	p("failovers:      %s", strings.Join(at, "; "))
	if *flagAsync {
		var behind []string
		for _, f := range r.fo {
			if !f.planned {
				behind = append(behind, fmt.Sprintf("%d B/%d jobs", f.behind, len(f.lostJobIDs)))
			}
		}
		p("async standby:  before each crash its WAL sender was stopped %s; WAL behind and commits lost per crash: %s", *flagAsyncLag, strings.Join(behind, ", "))
		for _, n := range r.asyncNotes {
			p("%s", n)
		}
	}
}
