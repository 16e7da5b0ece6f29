package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

const sharedGeomIdx = "parcels_shared_geom_idx"

// sharedIndexBytes is the size of geoingest_store.<name>.
func sharedIndexBytes(t *testing.T, b *bundle, name string) int64 {
	t.Helper()
	return countRows(t, b, `SELECT pg_relation_size(to_regclass('geoingest_store.' || $1))`, name)
}

// invalidIndexes is the number of INVALID indexes in the database.
func invalidIndexes(t *testing.T, b *bundle) int64 {
	t.Helper()
	return countRows(t, b, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`)
}

// analyzeShared refreshes the shared partition's reltuples, as autovacuum
// would.
func analyzeShared(t *testing.T, b *bundle) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `VACUUM ANALYZE geoingest_store.parcels_shared`)
	require.NoError(t, err)
}

// rebuilt is the names of the indexes r rebuilt.
func rebuilt(r ingest.CompactResult) []string {
	var out []string
	for _, x := range r.Rebuilt {
		out = append(out, x.Index)
	}
	return out
}

// waitForReindex waits until a REINDEX CONCURRENTLY session is waiting
// for a lock (the held writer's) and returns its pid.
func waitForReindex(t *testing.T, b *bundle) int32 {
	t.Helper()
	var pid int32
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'REINDEX INDEX CONCURRENTLY%' AND state = 'active' AND wait_event_type = 'Lock'`).Scan(&pid)
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "no REINDEX waiting for the held writer")
	return pid
}

// holdWrite runs a job of path whose write gate holds its transaction
// open before COMMIT (so it holds its lock on the partition it writes)
// until release is called (at the latest when the test ends).
func holdWrite(t *testing.T, b *bundle, path string) (release func(), done chan ingest.Result) {
	held, unheld, done := make(chan struct{}), make(chan struct{}), make(chan ingest.Result, 1)
	var once, releaseOnce sync.Once
	release = func() { releaseOnce.Do(func() { close(unheld) }) }
	t.Cleanup(release)
	hctx := ingest.WithHook(context.Background(), func(point string, _ ingest.HookWhere) bool {
		if point == ingest.HookBeforeCommit {
			once.Do(func() { close(held); <-unheld })
		}
		return false
	})
	go func() { done <- b.svc.Run(hctx, localJob(t, path, ingest.DefaultParams("parcels"))) }()
	select {
	case <-held:
	case r := <-done:
		t.Fatalf("the held write ended: %+v", r)
	}
	return release, done
}

// TestCompactRebuildsGrownSharedIndex: the compactor rebuilds a shared
// partition's index once (no record yet), then only when its bytes per
// row have grown past ReindexFactor of the record. A rebuild killed
// midway (its session terminated while it waits for a writer) leaves an
// INVALID _ccnew index; the next round drops it and rebuilds. Meanwhile a
// small job commits into the shared partition, a large job attaches its
// own partition (ACCESS EXCLUSIVE on the parent) and readers query, none
// blocked by the rebuild; every row is there after it and verify is clean.
func TestCompactRebuildsGrownSharedIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	b.store.OwnPartitionBytes = 100_000 // the 2,000-square sources get partitions of their own, the small ones not
	o := ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1, LockTimeout: time.Second}
	base := time.Now().Add(-time.Hour)

	src := filepath.Join(dir, "src.geojson")
	writeSquares(t, src, 0, 2000, "v0", base)
	res := b.svc.Run(ctx, localJob(t, src, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	r, err := b.store.Compact(ctx, o) // folds it: no statistics yet, nothing rebuilt
	require.NoError(t, err)
	require.Len(t, r.Folded, 1)
	require.Empty(t, r.Rebuilt)
	analyzeShared(t, b)

	r, err = b.store.Compact(ctx, o)
	require.NoError(t, err)
	require.Contains(t, rebuilt(r), sharedGeomIdx, "an index with no record is rebuilt once: %s", r)
	require.NotContains(t, rebuilt(r), "admin_units_shared_geom_idx", "no rows, no rebuild")
	r, err = b.store.Compact(ctx, o)
	require.NoError(t, err)
	require.Empty(t, r.Rebuilt, "not grown since its rebuild")

	// Replacements insert and delete in the shared partition: after
	// VACUUM the rows are as many, the GiST holds their pages still.
	for v := 1; v <= 5; v++ {
		writeSquares(t, src, 0, 2000, "v"+string(rune('0'+v)), base.Add(time.Duration(v)*time.Minute))
		res := b.svc.Run(ctx, localJob(t, src, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome)
		_, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0, ReindexFactor: -1})
		require.NoError(t, err)
	}
	analyzeShared(t, b)
	grown := sharedIndexBytes(t, b, sharedGeomIdx)

	// A rebuild killed midway: a small job holds its write to the shared
	// partition open, the REINDEX waits for it, the test terminates the
	// REINDEX's session.
	small := filepath.Join(dir, "small1.geojson")
	writeSquares(t, small, 1, 5, "v1", time.Now())
	release, done := holdWrite(t, b, small)
	compacted := make(chan error, 1)
	go func() { _, err := b.store.Compact(ctx, o); compacted <- err }()
	pid := waitForReindex(t, b)
	require.EqualValues(t, 1, countRows(t, b, `SELECT count(*) FROM pg_class WHERE relname LIKE 'parcels_shared%_ccnew%'`))
	var ok bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok))
	require.True(t, ok)
	require.Error(t, <-compacted)
	release()
	res = <-done
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Positive(t, invalidIndexes(t, b), "the killed REINDEX left its new index")

	// The next round: readers and writers go on while it rebuilds.
	stop := make(chan struct{})
	var reads atomic.Int64
	var slowest atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			var n int64
			if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels
				WHERE geom && ST_MakeEnvelope(2, 48, 2.001, 48.01, 4326)`).Scan(&n); err != nil {
				t.Error(err)
				return
			}
			if d := time.Since(start).Milliseconds(); d > slowest.Load() {
				slowest.Store(d)
			}
			reads.Add(1)
		}
	}()
	// A long report's snapshot holds the REINDEX in its wait for older
	// transactions, which blocks no one.
	report, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer func() { _ = report.Rollback(ctx) }()
	_ = countRows(t, b, `SELECT 1`) // another session's work, so the snapshot below is not the newest
	var n int64
	require.NoError(t, report.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n))
	results := make(chan ingest.CompactResult, 1)
	go func() {
		r, err := b.store.Compact(ctx, o)
		if err != nil {
			t.Error(err)
		}
		results <- r
	}()
	pid = waitForReindex(t, b)
	// While the REINDEX runs: a small job commits into the shared
	// partition, a large one attaches a partition of its own.
	for _, w := range []struct {
		name string
		n    int
	}{{"small2", 5}, {"large", 2000}} {
		p := filepath.Join(dir, w.name+".geojson")
		writeSquares(t, p, 2+w.n, w.n, "v1", time.Now())
		start := time.Now()
		res = b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome)
		t.Logf("%s job written beside the REINDEX in %v", w.name, time.Since(start))
		own := countRows(t, b, `SELECT count(*) FROM jobs WHERE job_id = $1 AND job_ref > 0`, res.JobID)
		require.EqualValues(t, map[bool]int64{true: 1, false: 0}[w.n > 5], own, "%s: a partition of its own (attached) only for the large job", w.name)
	}
	require.EqualValues(t, 1, countRows(t, b, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'REINDEX%' AND state = 'active'`, pid),
		"the jobs were written while the REINDEX ran")
	require.NoError(t, report.Commit(ctx))
	r = <-results
	close(stop)
	wg.Wait()
	t.Logf("%s; %d reads, the slowest %d ms", r, reads.Load(), slowest.Load())
	require.GreaterOrEqual(t, r.LeftoversDropped, 1)
	require.Contains(t, rebuilt(r), sharedGeomIdx)
	require.Zero(t, invalidIndexes(t, b))
	after := sharedIndexBytes(t, b, sharedGeomIdx)
	require.Less(t, after, grown, "the rebuild gave back the index's growth")
	require.Positive(t, reads.Load())
	require.Less(t, slowest.Load(), int64(3000), "a reader waited for the rebuild")

	// Every row is there, once: the generation replaced five times, the two small
	// jobs committed beside the rebuilds, the large one.
	require.EqualValues(t, 2000+5+5+2000, countRows(t, b, `SELECT count(*) FROM parcels`))
	seen := currentCounts(t, b.pool)
	for id, row := range ledger(t, b) {
		if row.Status == "current" {
			require.Equal(t, row.Count, seen[id], id)
		}
	}
	requireVerifyClean(t, b)
}

// TestCompactReindexAsWriter: geoingest_writer, which serve runs as, does
// not own the tables and may not REINDEX: its compactor folds as before,
// rebuilds nothing, and names the index that is due (the owner's
// compactor then rebuilds it).
func TestCompactReindexAsWriter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.store.OwnPartitionBytes = 1
	src := filepath.Join(t.TempDir(), "src.geojson")
	writeSquares(t, src, 0, 500, "v1", time.Now())
	res := b.svc.Run(ctx, localJob(t, src, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)

	role := fmt.Sprintf("reindex_writer_%d", time.Now().UnixNano())
	_, err := b.pool.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN IN ROLE geoingest_writer`, role))
	require.NoError(t, err)
	cfg := b.pool.Config().Copy()
	cfg.ConnConfig.User = role
	wpool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(wpool.Close)
	writer := newTestService(wpool, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil))).Store.(*Store)

	o := ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1}
	r, err := writer.Compact(ctx, o)
	require.NoError(t, err)
	require.Len(t, r.Folded, 1, "the writer folds")
	analyzeShared(t, b)
	r, err = writer.Compact(ctx, o)
	require.NoError(t, err)
	require.Empty(t, r.Rebuilt)
	require.Contains(t, r.ReindexDenied, sharedGeomIdx)
	require.Contains(t, r.String(), "may not rebuild")

	r, err = b.store.Compact(ctx, o)
	require.NoError(t, err)
	require.Contains(t, rebuilt(r), sharedGeomIdx, "the owner's compactor rebuilds it")
	r, err = writer.Compact(ctx, o)
	require.NoError(t, err)
	require.Empty(t, r.ReindexDenied, "rebuilt, so no longer due")
	requireVerifyClean(t, b)
}

// TestCompactLeavesARunningReindexAlone: another session's REINDEX
// CONCURRENTLY at work (its INVALID _ccnew is not a leftover yet) is not
// dropped under it: the compactor's DROP gives up at its lock timeout,
// and rebuilds nothing of that partition this round.
func TestCompactLeavesARunningReindexAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.store.OwnPartitionBytes = 1
	src := filepath.Join(t.TempDir(), "src.geojson")
	writeSquares(t, src, 0, 500, "v1", time.Now())
	res := b.svc.Run(ctx, localJob(t, src, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	o := ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1, LockTimeout: 200 * time.Millisecond}
	_, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0, ReindexFactor: -1})
	require.NoError(t, err)
	analyzeShared(t, b)

	// An operator's REINDEX, held in its wait for a long report.
	report, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer func() { _ = report.Rollback(ctx) }()
	var n int64
	require.NoError(t, report.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n))
	manual := make(chan error, 1)
	go func() {
		_, err := b.pool.Exec(ctx, `REINDEX INDEX CONCURRENTLY geoingest_store.parcels_shared_geom_idx`)
		manual <- err
	}()
	waitForReindex(t, b)
	require.Positive(t, invalidIndexes(t, b))

	start := time.Now()
	r, err := b.store.Compact(ctx, o)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Zero(t, r.LeftoversDropped)
	require.NotContains(t, rebuilt(r), sharedGeomIdx)
	require.NotContains(t, rebuilt(r), "parcels_shared_job_ref_idx", "its table has a rebuild at work")

	require.NoError(t, report.Commit(ctx))
	require.NoError(t, <-manual, "the operator's REINDEX was left to finish")
	require.Zero(t, invalidIndexes(t, b))
	requireVerifyClean(t, b)
}

// TestCompactResetsTheSessionLockTimeout: the session the index rebuild
// used goes back to the pool with the lock_timeout it had (here the
// database's), not with 0 (no timeout at all for the next user).
func TestCompactResetsTheSessionLockTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.store.OwnPartitionBytes = 1
	src := filepath.Join(t.TempDir(), "src.geojson")
	writeSquares(t, src, 0, 500, "v1", time.Now())
	res := b.svc.Run(ctx, localJob(t, src, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	_, err := b.pool.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET lock_timeout = '7s'`, pgx.Identifier{b.pool.Config().ConnConfig.Database}.Sanitize()))
	require.NoError(t, err)

	cfg := b.pool.Config().Copy()
	cfg.MaxConns = 1 // the rebuild's session is the one SHOW gets next
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	store := newTestService(one, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil))).Store.(*Store)
	var before string
	require.NoError(t, one.QueryRow(ctx, `SHOW lock_timeout`).Scan(&before))
	require.Equal(t, "7s", before)

	r, err := store.Compact(ctx, ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1})
	require.NoError(t, err)
	require.Len(t, r.Folded, 1)
	analyzeShared(t, b)
	r, err = store.Compact(ctx, ingest.CompactOptions{Keep: 0, ReindexMinBytes: 1})
	require.NoError(t, err)
	require.NotEmpty(t, r.Rebuilt, "the rebuild ran on the session")
	var after string
	require.NoError(t, one.QueryRow(ctx, `SHOW lock_timeout`).Scan(&after))
	require.Equal(t, "7s", after)
}
