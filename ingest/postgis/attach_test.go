package postgis

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// The tests of this file are about a large job's own partition: how its
// commit (the partition's ATTACH) meets readers, and the lock order of
// two large-job writers.

// mismatchedGenerations is, in one statement run by q, the current parcel
// generations whose rows a reader does not see exactly as the ledger
// counts them, described; "" when every one is seen once.
func mismatchedGenerations(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (string, error) {
	var bad int64
	var detail *string
	err := q.QueryRow(ctx, `
		SELECT count(*), string_agg(j.job_id || ' (ref ' || j.job_ref || '): ' || j.feature_count || ' in the ledger, ' || coalesce(c.n, 0) || ' seen', '; ') FROM jobs j
		LEFT JOIN (SELECT job_id, count(*) AS n FROM geoingest_current_parcels GROUP BY job_id) c ON c.job_id = j.job_id
		WHERE j.status = 'current' AND j.target_table = 'parcels' AND coalesce(c.n, 0) <> j.feature_count`).Scan(&bad, &detail)
	if err != nil || bad == 0 {
		return "", err
	}
	return fmt.Sprintf("%d current generations seen with the wrong number of rows: %s", bad, *detail), nil
}

// TestOwnPartitionCommitReadersSeeEachGenerationOnce: while large jobs
// (each attaching a partition of its own) commit one after another,
// readers polling in READ COMMITTED, with and without a prepared plan,
// and in REPEATABLE READ, see every current generation's rows exactly as
// the ledger counts them, never its ledger row without its rows. Without
// the write gate's ACCESS EXCLUSIVE lock on the target around the attach,
// a reader that built its partition list before the commit and took its
// snapshot after it saw the new ledger row and none of its rows.
func TestOwnPartitionCommitReadersSeeEachGenerationOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	ownSources(t, b, dir, 2, 5)

	stop := make(chan struct{})
	var readerErr atomic.Value
	var reads atomic.Int64
	var wg sync.WaitGroup
	reader := func(read func() (string, error)) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			bad, err := read()
			if err == nil && bad != "" {
				err = errors.New(bad)
			}
			if err != nil {
				readerErr.Store(err)
				return
			}
			reads.Add(1)
		}
	}
	wg.Add(3)
	go reader(func() (string, error) { return mismatchedGenerations(ctx, b.pool) })
	go reader(func() (string, error) { // one connection: its plans are cached
		c, err := b.pool.Acquire(ctx)
		if err != nil {
			return "", err
		}
		defer c.Release()
		for i := 0; i < 20; i++ {
			if bad, err := mismatchedGenerations(ctx, c); bad != "" || err != nil {
				return bad, err
			}
		}
		return "", nil
	})
	go reader(func() (string, error) {
		tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return "", err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		return mismatchedGenerations(ctx, tx)
	})

	for i := 0; i < 30; i++ {
		p := filepath.Join(dir, fmt.Sprintf("new%02d.geojson", i))
		writeSquares(t, p, 20+i, 5, "v1", time.Now())
		res := b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome)
		if readerErr.Load() != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	if err, _ := readerErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	require.Positive(t, reads.Load())
	requireVerifyClean(t, b)
}

// oldSnapshot begins a repeatable-read transaction and takes its snapshot
// by reading the ledger, touching no feature table.
func oldSnapshot(t *testing.T, b *bundle) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n))
	return tx
}

// featureRows is the parcels rows q sees, all generations together, and
// those of the current view (the tests using it hold one source).
func featureRows(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (parcels, current int64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, q.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&parcels))
	require.NoError(t, q.QueryRow(ctx, `SELECT count(*) FROM geoingest_current_parcels`).Scan(&current))
	return parcels, current
}

// TestOldSnapshotSeesReplacedGenerationOnce: a repeatable-read reader
// whose snapshot is older than a replace, and which reads the parcels
// only after the replace committed, sees the replaced generation exactly
// once, in parcels and in the current view, whether that generation was
// in the shared partition (folded) or in a partition of its own, and
// whether the new one has a partition of its own or not. Before, the
// replacing job's rows written by COPY FREEZE were visible to that
// snapshot too (the generation twice in parcels), and a replaced own
// partition was dropped (none in the current view).
func TestOldSnapshotSeesReplacedGenerationOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		foldOld, ownNew bool
	}{
		{"own by own", false, true},
		{"folded by own", true, true},
		{"own by shared", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			dir := t.TempDir()
			b.store.OwnPartitionBytes = 1
			p := filepath.Join(dir, "src.geojson")
			writeSquares(t, p, 0, 12, "v1", time.Now().Add(-time.Hour))
			res := b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
			require.NoError(t, res.Err)
			if c.foldOld {
				r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
				require.NoError(t, err)
				require.Len(t, r.Folded, 1)
			}

			old := oldSnapshot(t, b)
			if !c.ownNew {
				b.store.OwnPartitionBytes = 1 << 40
			}
			writeSquares(t, p, 0, 7, "v2", time.Now())
			res = b.svc.Run(ctx, unguarded(localJob(t, p, ingest.DefaultParams("parcels"))))
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Written, res.Outcome)

			all, cur := featureRows(t, old)
			require.EqualValues(t, 12, all, "the old snapshot sees the old generation once in parcels, and not the new one")
			require.EqualValues(t, 12, cur, "the old snapshot sees the old generation in the current view")
			require.NoError(t, old.Commit(ctx))
			all, cur = featureRows(t, b.pool)
			require.EqualValues(t, 7, all)
			require.EqualValues(t, 7, cur)
			requireVerifyClean(t, b)
		})
	}
}

// isDeadlock reports a PostgreSQL deadlock (40P01) anywhere in err.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// TestLargeJobWritersDoNotDeadlock: a large job whose COPY is under way
// (its table created, not yet attached) and another that replaces a
// generation with a partition of its own both commit, in the order that
// deadlocked when a job's table was created LIKE the target (a share lock
// on the target held to commit) and a replace dropped its old partition
// (an exclusive lock on it) between its ATTACH and its commit.
func TestLargeJobWritersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	paths, _ := ownSources(t, b, dir, 1, 10)

	// A: a new source, held in its COPY.
	pa := filepath.Join(dir, "a.geojson")
	writeSquares(t, pa, 5, 10, "v1", time.Now())
	ja := localJob(t, pa, ingest.DefaultParams("parcels"))
	held, release := make(chan struct{}), make(chan struct{})
	actx := ingest.WithHook(ctx, func(point string, w ingest.HookWhere) bool {
		if point == ingest.HookDuringCopy && w.Job == ja.ID {
			close(held)
			<-release
		}
		return false
	})
	aDone := make(chan ingest.Result)
	go func() { aDone <- b.svc.Run(actx, ja) }()
	<-held

	// B: a new version of the own-partition source, to commit meanwhile.
	writeSquares(t, paths[0], 0, 6, "v2", time.Now())
	bDone := make(chan ingest.Result)
	go func() { bDone <- b.svc.Run(ctx, unguarded(localJob(t, paths[0], ingest.DefaultParams("parcels")))) }()
	var rb ingest.Result
	select {
	case rb = <-bDone: // it does not wait for A
	case <-time.After(1500 * time.Millisecond): // it waits for A: A goes on, as it did when it deadlocked
	}
	close(release)
	ra := <-aDone
	if rb.JobID == "" {
		rb = <-bDone
	}
	for _, r := range []ingest.Result{ra, rb} {
		require.False(t, isDeadlock(r.Err), "deadlock: %v", r.Err)
		require.NoError(t, r.Err)
		require.Equal(t, ingest.Written, r.Outcome)
	}
	requireVerifyClean(t, b)
}

// TestConcurrentLargeJobWritersNoDeadlock: several workers write and
// replace large jobs (each with a partition of its own) of overlapping
// sources at once, with the compactor folding beside them: no write gate
// fails with a deadlock (40P01), and verify is clean.
func TestConcurrentLargeJobWritersNoDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	b.store.OwnPartitionBytes = 1
	const workers, rounds = 4, 6
	var (
		mu     sync.Mutex
		errs   []error
		wg     sync.WaitGroup
		stop   = make(chan struct{})
		seq    atomic.Int64
		folded atomic.Int64
	)
	wg.Add(1)
	go func() { // the compactor
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0, LockTimeout: 50 * time.Millisecond})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("compact: %w", err))
				mu.Unlock()
			}
			folded.Add(int64(len(r.Folded)))
		}
	}()
	var writers sync.WaitGroup
	for w := 0; w < workers; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			for r := 0; r < rounds; r++ {
				n := seq.Add(1)
				src := w*2 + r%2 // each worker's own two sources: no file is rewritten under another's job
				p := filepath.Join(dir, fmt.Sprintf("src%d.geojson", src))
				writeSquares(t, p, src, 5+int(n%7), fmt.Sprint(n), time.Now())
				res := b.svc.Run(ctx, unguarded(localJob(t, p, ingest.DefaultParams("parcels"))))
				if res.Err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("job %d: %w", n, res.Err))
					mu.Unlock()
				}
			}
		}(w)
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	for _, err := range errs {
		require.False(t, isDeadlock(err), "deadlock: %v", err)
	}
	require.Empty(t, errs)
	requireVerifyClean(t, b)
	t.Logf("%d jobs written, %d folds", seq.Load(), folded.Load())
}
