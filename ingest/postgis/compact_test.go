package postgis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// writeSquares writes a GeoJSON file of n small squares at column x (so
// that each source's parcels are distinct) with modification time mtime,
// which orders a local file's versions.
func writeSquares(t *testing.T, path string, x, n int, tag string, mtime time.Time) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		lon, lat := 2+float64(x)*0.01, 48+float64(i)*0.0002
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"i":%d,"tag":%q},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			i, tag, lon, lat, lon+0.0001, lat, lon+0.0001, lat+0.0001, lon, lat+0.0001, lon, lat)
	}
	b.WriteString(`]}`)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	require.NoError(t, os.Chtimes(path, mtime, mtime))
}

// ledgerRow is what compaction must not change of a job.
type ledgerRow struct {
	Count    int64
	Area     float64
	Checksum string
	Status   string
}

func ledger(t *testing.T, b *bundle) map[string]ledgerRow {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT job_id, feature_count, total_area_m2, features_checksum, status FROM jobs`)
	require.NoError(t, err)
	out := map[string]ledgerRow{}
	for rows.Next() {
		var id string
		var r ledgerRow
		require.NoError(t, rows.Scan(&id, &r.Count, &r.Area, &r.Checksum, &r.Status))
		out[id] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// partitions is the number of partitions of parcels.
func partitions(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) int {
	t.Helper()
	var n int
	require.NoError(t, q.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`).Scan(&n))
	return n
}

// currentCounts is, per current parcel job, the rows a reader sees for it
// through geoingest_current_parcels, read in one statement by q.
func currentCounts(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) map[string]int64 {
	t.Helper()
	rows, err := q.Query(context.Background(), `SELECT job_id, count(*) FROM geoingest_current_parcels GROUP BY job_id`)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		require.NoError(t, rows.Scan(&id, &n))
		out[id] = n
	}
	require.NoError(t, rows.Err())
	return out
}

func countRows(t *testing.T, b *bundle, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func requireVerifyClean(t *testing.T, b *bundle) {
	t.Helper()
	v, err := b.store.Verify(context.Background())
	require.NoError(t, err)
	require.True(t, v.OK(), "verify: %v", v.Problems)
}

// sources writes n sources of size features each, every one into a
// partition of its own, and returns their paths and job ids.
func ownSources(t *testing.T, b *bundle, dir string, n, size int) ([]string, []string) {
	t.Helper()
	b.store.OwnPartitionBytes = 1
	var paths, ids []string
	base := time.Now().Add(-time.Hour)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("src%02d.geojson", i))
		writeSquares(t, p, i, size, "v1", base)
		res := b.svc.Run(context.Background(), localJob(t, p, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome)
		paths, ids = append(paths, p), append(ids, res.JobID)
	}
	return paths, ids
}

// TestCompactFoldsOldestAndKeepsLedger: with Keep 2, the oldest own
// partitions are folded into parcels_shared and dropped; each job's
// ledger row (count, area, checksum, status) is unchanged, verify is
// clean, readers see every generation exactly once; replacing and
// retiring a folded generation deletes its rows from the shared
// partition.
func TestCompactFoldsOldestAndKeepsLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	paths, ids := ownSources(t, b, dir, 5, 30)
	require.Equal(t, 6, partitions(t, b.pool), "the shared partition and five own")
	before := ledger(t, b)
	seen := currentCounts(t, b.pool)

	r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 2})
	require.NoError(t, err)
	require.Len(t, r.Folded, 3)
	for i, f := range r.Folded {
		require.Equal(t, ids[i], f.JobID, "the oldest are folded first")
		require.EqualValues(t, 30, f.Rows)
	}
	require.Equal(t, 3, r.Dropped)
	require.Zero(t, r.Pending)
	require.Equal(t, 2, r.Own["parcels"])
	require.Equal(t, 3, partitions(t, b.pool), "the shared partition and the two newest")
	require.Equal(t, before, ledger(t, b), "the ledger's count, area, checksum and status are unchanged")
	require.Equal(t, seen, currentCounts(t, b.pool))
	requireVerifyClean(t, b)
	var folded int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE job_ref < 0 AND job_id = ANY($1)`, ids[:3]).Scan(&folded))
	require.Equal(t, 3, folded)

	// Nothing more to do.
	r, err = b.store.Compact(ctx, ingest.CompactOptions{Keep: 2})
	require.NoError(t, err)
	require.Empty(t, r.Folded)

	// A new version of a folded source (a small job, in the shared
	// partition) replaces it: the old rows leave the shared partition.
	b.store.OwnPartitionBytes = 1 << 40
	writeSquares(t, paths[0], 0, 7, "v2", time.Now())
	res := b.svc.Run(ctx, unguarded(localJob(t, paths[0], ingest.DefaultParams("parcels"))))
	require.NoError(t, res.Err)
	require.Equal(t, ids[0], res.Replaced)
	// A removal of another folded source retires it.
	src := localJob(t, paths[1], ingest.DefaultParams("parcels")).Source
	src.Order = ingest.OrderFromTime(time.Now())
	del, err := ingest.NewDeleteJob(src, ingest.DefaultParams("parcels"))
	require.NoError(t, err)
	res = b.svc.Run(ctx, del)
	require.NoError(t, res.Err, "%v", res)
	require.Equal(t, ingest.Retired, res.Outcome)
	var n int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref WHERE j.job_id = ANY($1)`, ids[:2]).Scan(&n))
	require.Zero(t, n)
	requireVerifyClean(t, b)
	require.Equal(t, int64(7+30*3), countRows(t, b, `SELECT count(*) FROM parcels`))
}

// TestCompactOldSnapshotSeesEachGenerationOnce: a repeatable-read reader
// whose snapshot predates a fold, and which reads the parcels only after
// the fold committed, still sees each generation exactly once (the rows
// in the emptied partition, not their copies); the emptied partition is
// dropped only once that reader has ended. A new reader sees the copies.
func TestCompactOldSnapshotSeesEachGenerationOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, ids := ownSources(t, b, t.TempDir(), 3, 20)
	want := currentCounts(t, b.pool)
	require.Len(t, want, 3)

	old, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer func() { _ = old.Rollback(ctx) }()
	var jobs int
	require.NoError(t, old.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&jobs)) // the snapshot, parcels untouched

	r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0, LockTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, r.Folded, 3)
	require.Zero(t, r.Dropped, "a reader older than the folds is still running")
	require.Equal(t, 3, r.Pending)

	require.Equal(t, want, currentCounts(t, old), "the old snapshot sees each generation once")
	var n int64
	require.NoError(t, old.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&n))
	require.EqualValues(t, 60, n)
	require.Equal(t, want, currentCounts(t, b.pool), "a new reader sees each generation once")
	require.NoError(t, old.Commit(ctx))

	r, err = b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
	require.NoError(t, err)
	require.Equal(t, 3, r.Dropped, "%s", b.logs)
	require.Zero(t, r.Pending)
	require.Equal(t, 1, partitions(t, b.pool))
	require.Equal(t, want, currentCounts(t, b.pool))
	requireVerifyClean(t, b)
	_ = ids
}

// TestCompactConcurrentReplaceAndReaders: while a fold is held before its
// commit, a new version of the same source waits for it (the source's row
// lock) and then replaces the folded generation; a write of another
// source, with a partition of its own, goes on beside it (its attach, the
// last statement of its gate, may wait for the fold to end, when the fold
// holds the target); readers polling throughout never see a current
// generation twice or not at all; verify is clean after.
func TestCompactConcurrentReplaceAndReaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	paths, ids := ownSources(t, b, dir, 3, 25)

	stop := make(chan struct{})
	var readerErr atomic.Value
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a reader: every current generation once, with its ledger count
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Every current generation, among them the one being folded,
			// the other source's written while the fold is held (its own
			// partition attached meanwhile) and the replacing one.
			bad, err := mismatchedGenerations(ctx, b.pool)
			if err == nil && bad != "" {
				err = errors.New(bad)
			}
			if err != nil {
				readerErr.Store(err)
				return
			}
			reads.Add(1)
		}
	}()

	held, release := make(chan struct{}), make(chan struct{})
	hctx := ingest.WithHook(ctx, func(point string, w ingest.HookWhere) bool {
		if point == ingest.HookBeforeFoldCommit && w.Job == ids[0] {
			close(held)
			<-release
		}
		return false
	})
	done := make(chan ingest.CompactResult)
	go func() {
		r, err := b.store.Compact(hctx, ingest.CompactOptions{Keep: 2})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-held

	// Another source, with a partition of its own, is written meanwhile.
	other := filepath.Join(dir, "other.geojson")
	writeSquares(t, other, 9, 10, "v1", time.Now())
	otherDone := make(chan ingest.Result)
	go func() { otherDone <- b.svc.Run(ctx, localJob(t, other, ingest.DefaultParams("parcels"))) }()

	// A new version of the source being folded waits for the fold.
	writeSquares(t, paths[0], 0, 5, "v2", time.Now())
	replaced := make(chan ingest.Result)
	go func() { replaced <- b.svc.Run(ctx, unguarded(localJob(t, paths[0], ingest.DefaultParams("parcels")))) }()
	select {
	case r := <-replaced:
		t.Fatalf("the replace did not wait for the fold: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	r := <-done
	require.Len(t, r.Folded, 1)
	require.Equal(t, ids[0], r.Folded[0].JobID)
	res := <-otherDone
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	res = <-replaced
	require.NoError(t, res.Err)
	require.Equal(t, ids[0], res.Replaced)

	close(stop)
	wg.Wait()
	if err, _ := readerErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	require.Positive(t, reads.Load())
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref WHERE j.job_id = $1`, ids[0]))
	require.EqualValues(t, 5+25+25+10, countRows(t, b, `SELECT count(*) FROM parcels`))
	requireVerifyClean(t, b)
}

// TestCompactSkipsJobThatDisagreesWithLedger: a job whose rows were
// changed behind geoingest's back is not moved (verify reports it where
// it is); the others are folded; two compactors at once fold each job
// once.
func TestCompactSkipsJobThatDisagreesWithLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, ids := ownSources(t, b, t.TempDir(), 4, 10)
	_, err := b.pool.Exec(ctx, `UPDATE parcels SET properties = '{"tampered":true}'
		WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1) AND feature_index = 3`, ids[0])
	require.NoError(t, err)

	var wg sync.WaitGroup
	results := make([]ingest.CompactResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
			require.NoError(t, err)
			results[i] = r
		}()
	}
	wg.Wait()
	folded := map[string]int{}
	for _, r := range results {
		for _, f := range r.Folded {
			folded[f.JobID]++
		}
	}
	r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0}) // whatever a busy one left
	require.NoError(t, err)
	for _, f := range r.Folded {
		folded[f.JobID]++
	}
	require.Equal(t, map[string]int{ids[1]: 1, ids[2]: 1, ids[3]: 1}, folded)
	require.Equal(t, 1, r.Own["parcels"], "the tampered job keeps its partition")
	v, err := b.store.Verify(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{ids[0]}, v.OffendingJobs())
}

// TestCompactDropsWhatAnEarlierRoundLeft: a fold committed by a compactor
// that died before recording what the drop waits for (here: the fold run
// by hand) is dropped by the next round, even one with nothing to fold.
func TestCompactDropsWhatAnEarlierRoundLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, ids := ownSources(t, b, t.TempDir(), 1, 5)
	_, err := b.pool.Exec(ctx, `SELECT geoingest_fold_job($1)`, ids[0])
	require.NoError(t, err)
	require.Equal(t, 2, partitions(t, b.pool), "emptied, not dropped")
	r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 8})
	require.NoError(t, err)
	require.Empty(t, r.Folded)
	require.Equal(t, 1, r.Dropped)
	require.Equal(t, 1, partitions(t, b.pool))
	requireVerifyClean(t, b)
}
