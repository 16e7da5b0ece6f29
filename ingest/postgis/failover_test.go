package postgis

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// pauseAt returns ctx whose work stops the first time it reaches point
// (for a job that match accepts, when match is not nil) until release is
// called (at the latest when the test ends); reached is closed then.
func pauseAt(t *testing.T, ctx context.Context, point string, match func(ingest.HookWhere) bool) (_ context.Context, reached <-chan struct{}, release func()) {
	at, go_ := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	release = func() { releaseOnce.Do(func() { close(go_) }) }
	t.Cleanup(release)
	return ingest.WithHook(ctx, func(p string, w ingest.HookWhere) bool {
		if p == point && (match == nil || match(w)) {
			once.Do(func() { close(at); <-go_ })
		}
		return false
	}), at, release
}

// failOver fails the formation's primary over while the work of a test
// is stopped in the middle: planned (pg_autoctl perform failover) or a
// crash of the primary's machine (SIGKILL of its postmaster and keeper).
// It returns once the new primary accepts writes.
func failOver(t *testing.T, hc *hatest.Cluster, crash bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	if !crash {
		p, err := hc.Failover(ctx)
		require.NoError(t, err)
		t.Logf("planned failover: %s is primary after %.1fs", p.Name, time.Since(start).Seconds())
		return
	}
	old, err := hc.KillPrimary(ctx)
	require.NoError(t, err)
	p, err := hc.WaitPrimary(ctx, old)
	require.NoError(t, err)
	t.Logf("crash of %s: %s is primary after %.1fs", old.Name, p.Name, time.Since(start).Seconds())
}

// outlive keeps the server process holder (a session's lock holder, on
// this machine) from running until the server process waiter has ended
// (at the latest a few minutes on, or when the test ends): holder's locks
// are released only after waiter has gone, whatever order a stop of the
// server ends them in.
func outlive(t *testing.T, holder, waiter int) {
	t.Helper()
	require.NoError(t, syscall.Kill(holder, syscall.SIGSTOP), "stop the holder's server process")
	var once sync.Once
	cont := func() { once.Do(func() { _ = syscall.Kill(holder, syscall.SIGCONT) }) }
	t.Cleanup(cont)
	go func() {
		defer cont()
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if err := syscall.Kill(waiter, 0); errors.Is(err, syscall.ESRCH) {
				return
			}
		}
	}()
}

// requireCutTransient: background work cut by a failover ends with a
// transient error (the next round does it again), never a permanent one.
func requireCutTransient(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err, "the failover cut the work")
	require.Equal(t, ingest.Transient, ingest.KindOf(err), "a failover is transient: %v", err)
}

// TestBackgroundWorkAcrossFailover: each kind of background work (a
// compaction's fold, prune, the report refresh, a shared index's
// REINDEX CONCURRENTLY) is stopped in its middle by a failover of a
// pg_auto_failover pair with a synchronous standby (docs/failover.md):
// the Store on the multi-host URL sees a transient error, and its next
// round on the same pool, against the new primary, finishes the work. No
// row is lost or doubled (the ledger and what readers see are unchanged,
// verify is clean) and nothing is left half done. The subtests share one
// formation (hatest.Shared), each on a database of its own.
func TestBackgroundWorkAcrossFailover(t *testing.T) {
	t.Parallel() // it waits for failovers most of the time
	// A crash of the primary while a fold is about to commit.
	t.Run("compaction", func(t *testing.T) {
		hc := hatest.Shared(t, hatest.Options{})
		b := setupOn(t, hc.URL())
		_, ids := ownSources(t, b, t.TempDir(), 3, 50)
		before, seen := ledger(t, b), currentCounts(t, b.pool)
		ctx, reached, release := pauseAt(t, context.Background(), ingest.HookBeforeFoldCommit, func(w ingest.HookWhere) bool { return w.Job == ids[1] })
		done := make(chan error, 1)
		var r ingest.CompactResult
		go func() {
			var err error
			r, err = b.store.Compact(ctx, ingest.CompactOptions{Keep: 0, ReindexFactor: -1})
			done <- err
		}()
		<-reached
		failOver(t, hc, true)
		release()
		requireCutTransient(t, <-done)
		require.Len(t, r.Folded, 1, "the fold before the failover committed")

		r2, err := b.store.Compact(context.Background(), ingest.CompactOptions{Keep: 0, ReindexFactor: -1})
		require.NoError(t, err)
		require.Len(t, r2.Folded, 2, "the next round folds the cut one and the rest: %s", r2)
		require.Zero(t, partitions(t, b.pool)-1, "only the shared partition is left")
		require.Equal(t, before, ledger(t, b), "the ledger is unchanged")
		require.Equal(t, seen, currentCounts(t, b.pool), "readers see every generation once")
		requireVerifyClean(t, b)
	})

	// A planned failover in the middle of one of prune's batches.
	t.Run("prune", func(t *testing.T) {
		hc := hatest.Shared(t, hatest.Options{})
		b := setupOn(t, hc.URL())
		bg := context.Background()
		// 3 sources of 3 versions each: 6 superseded ledger rows.
		for s := 0; s < 3; s++ {
			for v := 1; v <= 3; v++ {
				job, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: fmt.Sprintf("parcels/s%d.geojson", s),
					VersionToken: fmt.Sprintf("v%d", v), Order: ingest.OrderFromSequencer(fmt.Sprintf("%d0", v))},
					ingest.DefaultParams("parcels"), fileFetcher{squares(t, fmt.Sprintf("s%dv%d.geojson", s, v), v+s, 0.001)})
				require.NoError(t, err)
				require.Equal(t, ingest.Written, b.svc.Run(bg, job).Outcome)
			}
		}
		policy := ingest.RetentionPolicy{KeepSuperseded: 0, Batch: 2}
		dry := policy
		dry.DryRun = true
		want, err := b.store.Prune(bg, dry)
		require.NoError(t, err)
		require.EqualValues(t, 6, want.Jobs)
		seen := currentCounts(t, b.pool)

		// At the second batch, a session of the test locks the claim of
		// its first job, so that the batch's one statement (ledger rows,
		// then claims) is cut while it waits, half done.
		batches := 0
		locked := make(chan struct{})
		locker, err := pgx.Connect(bg, hc.URL())
		require.NoError(t, err)
		t.Cleanup(func() { locker.Close(bg) })
		var lockerPID int
		require.NoError(t, locker.QueryRow(bg, `SELECT pg_backend_pid()`).Scan(&lockerPID))
		ctx := ingest.WithHook(bg, func(p string, w ingest.HookWhere) bool {
			if p != ingest.HookPruneBatch {
				return false
			}
			if batches++; batches == 2 {
				_, err := locker.Exec(bg, `BEGIN; SELECT 1 FROM claims WHERE job_id = '`+w.Job+`' FOR UPDATE`)
				require.NoError(t, err)
				close(locked)
			}
			return false
		})
		done := make(chan ingest.PruneResult, 1)
		errc := make(chan error, 1)
		go func() { r, err := b.store.Prune(ctx, policy); done <- r; errc <- err }()
		<-locked
		var waiterPID int
		require.Eventually(t, func() bool {
			err := b.pool.QueryRow(bg, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
				AND query LIKE '%DELETE FROM claims c USING gone%' AND wait_event_type = 'Lock'`).Scan(&waiterPID)
			return err == nil
		}, 30*time.Second, 20*time.Millisecond, "the batch waits for the claim")
		// The stop of the old primary ends every session at once, the
		// locker's too: had the locker's end come first, the waiting
		// batch would commit in between (under load it did). The locker's
		// server process is stopped until the batch's has ended.
		outlive(t, lockerPID, waiterPID)
		failOver(t, hc, false)
		first, err := <-done, <-errc
		t.Logf("prune cut after %d ledger rows: %v", first.Jobs, err)
		requireCutTransient(t, err)
		require.EqualValues(t, 2, first.Jobs, "the first batch was removed before the failover, the second rolled back")

		second, err := b.store.Prune(bg, policy)
		require.NoError(t, err)
		require.Equal(t, want.Jobs, first.Jobs+second.Jobs, "the next run removes exactly the rest")
		jobs, claims := ledgerRows(t, b)
		require.EqualValues(t, 3, jobs, "the current generations' ledger rows stay")
		require.EqualValues(t, 3, claims)
		require.Equal(t, seen, currentCounts(t, b.pool))
		again, err := b.store.Prune(bg, policy)
		require.NoError(t, err)
		require.Zero(t, again.Jobs)
		requireVerifyClean(t, b)
	})

	// A crash of the primary while a report pair is about to commit.
	t.Run("report refresh", func(t *testing.T) {
		hc := hatest.Shared(t, hatest.Options{})
		b := setupOn(t, hc.URL())
		e := &rpEnv{pool: b.pool, store: b.store, svc: b.svc, metrics: b.metrics}
		e.rpIngest(t, rpAdmin, "admin_units")
		b.svc.NoReportRefresh = true
		dir := t.TempDir()
		for i := 0; i < 3; i++ {
			p := filepath.Join(dir, fmt.Sprintf("p%d.geojson", i))
			writeSquares(t, p, i, 40, "v1", time.Now())
			e.rpIngest(t, p, "parcels")
		}
		pairs := 0
		ctx, reached, release := pauseAt(t, context.Background(), ingest.HookBeforeRefreshCommit, func(ingest.HookWhere) bool { pairs++; return pairs == 2 })
		errc := make(chan error, 1)
		go func() { _, err := b.store.RefreshReports(ctx); errc <- err }()
		<-reached
		failOver(t, hc, true)
		release()
		requireCutTransient(t, <-errc)
		require.EqualValues(t, 1, countRows(t, b, `SELECT count(*) FROM report_assignments`), "the first pair committed before the failover")

		r, err := b.store.RefreshReports(context.Background())
		require.NoError(t, err)
		require.Equal(t, 2, r.Assigned, "the next refresh assigns the cut pair and the rest")
		require.EqualValues(t, 3, countRows(t, b, `SELECT count(*) FROM report_assignments`))
		compareStoredCells(t, e)
		r, err = b.store.RefreshReports(context.Background())
		require.NoError(t, err)
		require.Zero(t, r.Assigned)
		requireVerifyClean(t, b)
	})

	// A planned failover while a shared index's REINDEX CONCURRENTLY
	// waits for a writer: the new primary has the rebuild's INVALID
	// leftover (the catalog is replicated), which the next round drops
	// before it rebuilds.
	t.Run("reindex", func(t *testing.T) {
		hc := hatest.Shared(t, hatest.Options{})
		b := setupOn(t, hc.URL())
		bg := context.Background()
		dir := t.TempDir()
		b.store.OwnPartitionBytes = 100_000
		o := ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1, LockTimeout: time.Second}
		src := filepath.Join(dir, "src.geojson")
		writeSquares(t, src, 0, 2000, "v0", time.Now().Add(-time.Hour))
		require.Equal(t, ingest.Written, b.svc.Run(bg, localJob(t, src, ingest.DefaultParams("parcels"))).Outcome)
		r, err := b.store.Compact(bg, o)
		require.NoError(t, err)
		require.Len(t, r.Folded, 1)
		analyzeShared(t, b) // the shared index now has no record: the next round rebuilds it

		small := filepath.Join(dir, "small.geojson")
		writeSquares(t, small, 5, 5, "s", time.Now())
		releaseWrite, written := holdWrite(t, b, small)
		errc := make(chan error, 1)
		go func() { _, err := b.store.Compact(bg, o); errc <- err }()
		waitForReindex(t, b)
		failOver(t, hc, false)
		requireCutTransient(t, <-errc)
		releaseWrite()
		require.Equal(t, ingest.Transient, ingest.KindOf((<-written).Err), "the held write was cut too")
		require.Positive(t, invalidIndexes(t, b), "the interrupted rebuild left its INVALID index on the new primary")

		r, err = b.store.Compact(bg, o)
		require.NoError(t, err)
		require.Positive(t, r.LeftoversDropped, "%s", r)
		require.Contains(t, rebuilt(r), sharedGeomIdx)
		require.Zero(t, invalidIndexes(t, b))
		res := b.svc.Run(bg, localJob(t, small, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome, "the cut job is written once on the new primary")
		require.EqualValues(t, 2005, countRows(t, b, `SELECT count(*) FROM parcels`))
		requireVerifyClean(t, b)
	})
}
