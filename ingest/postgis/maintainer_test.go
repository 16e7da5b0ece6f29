package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingRefresher is the store's refresh, counted.
type countingRefresher struct {
	ingest.ReportRefresher
	calls atomic.Int64
}

func (c *countingRefresher) RefreshReports(ctx context.Context) (ingest.RefreshResult, error) {
	c.calls.Add(1)
	return c.ReportRefresher.RefreshReports(ctx)
}

// TestMaintainerBesideTheJobs: serve's one maintainer, on the store: a
// committed job's kick runs a report refresh and a written job's kick a
// compaction round though their intervals are an hour away (the own
// partitions are folded and the emptied ones dropped), and the prune runs
// on its interval (the replaced generation's ledger row goes). Verify is
// clean after it, and a stopped (or nil) maintainer's kicks never block.
func TestMaintainerBesideTheJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.svc.NoReportRefresh = true
	dir := t.TempDir()
	paths, ids := ownSources(t, b, dir, 3, 20)
	writeSquares(t, paths[0], 0, 20, "v2", time.Now())
	res := b.svc.Run(ctx, localJob(t, paths[0], ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Greater(t, partitions(t, b.pool), 2) // the shared one and the own ones
	require.EqualValues(t, 1, countRows(t, b, `SELECT count(*) FROM jobs WHERE job_id = $1`, ids[0]))

	refresher := &countingRefresher{ReportRefresher: b.store}
	m := &ingest.Maintainer{
		Refresher: refresher, RefreshEvery: time.Hour,
		Compactor: b.store, CompactEvery: time.Hour, CompactOptions: ingest.CompactOptions{Keep: 0, LockTimeout: 5 * time.Second},
		Pruner: b.store, PruneEvery: 100 * time.Millisecond,
		Retention: ingest.RetentionPolicy{KeepSuperseded: 0, MinAge: 0, StaleClaimAge: 0, Batch: 1000},
	}
	m.Start(ctx)
	m.Committed()
	// A round that folds may leave an emptied partition to the next one
	// (a transaction of the database was running at the fold): the next
	// written job's kick is that round, so the wait kicks again; with
	// hour-long intervals only a kick runs a refresh or a compaction.
	var last atomic.Value // the state the wait saw last, for its message
	last.Store("not polled")
	ok := assert.Eventually(t, func() bool {
		m.Written()
		calls, parts := refresher.calls.Load(), partitions(t, b.pool)
		ledger := countRows(t, b, `SELECT count(*) FROM jobs WHERE job_id = $1`, ids[0])
		last.Store(fmt.Sprintf("refresh calls %d, partitions %d, replaced ledger rows %d", calls, parts, ledger))
		return calls >= 1 && parts == 1 && ledger == 0
	}, time.Minute, 250*time.Millisecond)
	require.True(t, ok, "after a minute: %s", last.Load())
	m.Stop()
	requireVerifyClean(t, b)
	require.Len(t, currentCounts(t, b.pool), 3)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			m.Committed()
			m.Written()
			(*ingest.Maintainer)(nil).Written()
		}
		m.Stop()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a stopped maintainer's kicks blocked")
	}
	r, err := (*ingest.Maintainer)(nil).FinishCompaction(ctx, ingest.CompactOptions{})
	require.NoError(t, err)
	require.Empty(t, r.Folded)
}

// TestFinishCompactionAnalyzesTheFoldedTables: a batch command's last
// rounds leave the parcels table's statistics as a whole (autovacuum never
// gathers a partitioned table's), so that a new connection's first plan
// does not pay for their absence; a table nothing was folded into is left
// alone.
func TestFinishCompactionAnalyzesTheFoldedTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	ownSources(t, b, t.TempDir(), 2, 20)
	inherited := func(table string) int64 {
		return countRows(t, b, `SELECT count(*) FROM pg_statistic WHERE starelid = $1::regclass AND stainherit`, table)
	}
	require.Zero(t, inherited("geoingest_store.parcels"))
	m := &ingest.Maintainer{Compactor: b.store}
	r, err := m.FinishCompaction(ctx, ingest.CompactOptions{Keep: 0})
	require.NoError(t, err)
	require.Len(t, r.Folded, 2)
	require.Equal(t, 1, partitions(t, b.pool))
	require.Positive(t, inherited("geoingest_store.parcels"))
	require.Zero(t, inherited("geoingest_store.admin_units"))
	requireVerifyClean(t, b)
}

// TestCompactOnceAnalyzesTheFoldedTables: `geoingest compact`'s one
// round (Maintainer.CompactOnce) analyzes the table it folded into as a
// whole, as the batch commands' finish does; a table nothing was folded
// into is left alone.
func TestCompactOnceAnalyzesTheFoldedTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	ownSources(t, b, t.TempDir(), 2, 20)
	inherited := func(table string) int64 {
		return countRows(t, b, `SELECT count(*) FROM pg_statistic WHERE starelid = $1::regclass AND stainherit`, table)
	}
	m := &ingest.Maintainer{Compactor: b.store}
	r, err := m.CompactOnce(ctx, ingest.CompactOptions{Keep: 1})
	require.NoError(t, err)
	require.Len(t, r.Folded, 1)
	require.Positive(t, inherited("geoingest_store.parcels"))
	require.Zero(t, inherited("geoingest_store.admin_units"))

	requireVerifyClean(t, b)
}

// TestServeAnalyzesTheFoldedTables: serve's compaction rounds analyze the
// table they fold into as a whole (Maintainer.AnalyzeEvery), as the batch
// commands' finish does, but under a policy: at once when the table was
// never analyzed as a whole, then at most once per AnalyzeEvery (a fold
// within the hour leaves the statistics as they were), and only once the
// rows folded since are a tenth of the table's.
func TestServeAnalyzesTheFoldedTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	parentRows := func() int64 {
		return countRows(t, b, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'geoingest_store.parcels'::regclass`)
	}
	require.EqualValues(t, -1, parentRows(), "never analyzed as a whole")
	ownSources(t, b, t.TempDir(), 2, 20)
	o := ingest.CompactOptions{Keep: 0, LockTimeout: 5 * time.Second}
	m := &ingest.Maintainer{Compactor: b.store, CompactEvery: time.Hour, CompactOptions: o, AnalyzeEvery: time.Hour}
	m.Start(ctx)
	m.Written()
	require.Eventually(t, func() bool { return parentRows() == 40 }, time.Minute, 100*time.Millisecond, "rows %d", parentRows())
	require.Equal(t, 1, partitions(t, b.pool))

	// Within the hour: folded, not analyzed again.
	ownSources(t, b, t.TempDir(), 2, 30)
	m.Written()
	require.Eventually(t, func() bool { return partitions(t, b.pool) == 1 }, time.Minute, 100*time.Millisecond)
	m.Written() // one more round, so that a round after the fold has run
	time.Sleep(time.Second)
	m.Stop()
	require.EqualValues(t, 40, parentRows())

	// Past the interval: a fold of less than a tenth of the table's rows
	// leaves the statistics; one of more analyzes it.
	m = &ingest.Maintainer{Compactor: b.store, CompactEvery: time.Hour, CompactOptions: o, AnalyzeEvery: time.Millisecond}
	m.Start(ctx)
	defer m.Stop()
	ownSources(t, b, t.TempDir(), 1, 3)
	m.Written()
	require.Eventually(t, func() bool { return partitions(t, b.pool) == 1 }, time.Minute, 100*time.Millisecond)
	m.Written()
	time.Sleep(time.Second)
	require.EqualValues(t, 40, parentRows(), "3 rows folded, against 40 at the last analysis")
	ownSources(t, b, t.TempDir(), 1, 20)
	m.Written()
	require.Eventually(t, func() bool { return parentRows() == 40+60+3+20 }, time.Minute, 100*time.Millisecond, "rows %d", parentRows())
	requireVerifyClean(t, b)
}

// TestAnalyzeParentAsWriter: geoingest_writer, which serve runs as, does
// not own the feature tables, and PostgreSQL 15 skips (with a mere
// warning) an ANALYZE by any other role: AnalyzeParent says so
// (ErrAnalyzeDenied, which serve's maintainer logs) instead of doing
// nothing silently; the owner's analyzes.
func TestAnalyzeParentAsWriter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	role := fmt.Sprintf("analyze_writer_%d", time.Now().UnixNano())
	_, err := b.pool.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN IN ROLE geoingest_writer`, role))
	require.NoError(t, err)
	cfg := b.pool.Config().Copy()
	cfg.ConnConfig.User = role
	wpool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(wpool.Close)
	writer := newTestService(wpool, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil))).Store.(*Store)
	parentRows := func() int64 {
		return countRows(t, b, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'geoingest_store.parcels'::regclass`)
	}
	require.ErrorIs(t, writer.AnalyzeParent(ctx, "parcels"), ingest.ErrAnalyzeDenied)
	require.EqualValues(t, -1, parentRows())
	require.NoError(t, b.store.AnalyzeParent(ctx, "parcels"))
	require.EqualValues(t, 0, parentRows())
}
