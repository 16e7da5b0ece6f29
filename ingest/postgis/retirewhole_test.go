package postgis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestDeleteKeepsTheGenerationWhole: deleting a source whose generation
// has a partition of its own keeps that partition as the history
// (migration 0046), no row copied, unless another session holds a
// snapshot that could still read it: then the rows are copied, as
// before, and that snapshot sees the deleted generation once. Either way
// the rows as of a time before the delete are the generation's, and
// after it none; verify is clean.
func TestDeleteKeepsTheGenerationWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.store.OwnPartitionBytes = 1
	p := ingest.DefaultParams("parcels")
	const asOf = `SELECT feature_id, properties, geom FROM geoingest_features_as_of('parcels', $1, 'b', 'parcels/x.geojson')`
	counts := func() (kept, copied, attached int64) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM geoingest_retired_tables), (SELECT count(*) FROM feature_history),
			(SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass)`).Scan(&kept, &copied, &attached))
		return
	}
	run := func(j ingest.Job, want ingest.Outcome) time.Time {
		r := b.svc.Run(ctx, j)
		require.NoError(t, r.Err)
		require.Equal(t, want, r.Outcome)
		time.Sleep(20 * time.Millisecond)
		return time.Now()
	}
	var fs []feat
	for i := 0; i < 12; i++ {
		fs = append(fs, sq(i, fmt.Sprintf(`{"i":%d}`, i)))
	}
	_, _, attached0 := counts()

	// 1. Beside an old snapshot: copied.
	t1 := run(version(t, writeFeats(t, "v1.geojson", fs), "v1", "10", p), ingest.Written)
	d1, n1 := historyDigest(t, b, `SELECT feature_id, properties, geom FROM geoingest_current_parcels`)
	require.EqualValues(t, 12, n1)
	old := oldSnapshot(t, b)
	t2 := run(deleteVersion(t, "d1", "20"), ingest.Retired)
	all, cur := featureRows(t, old)
	require.EqualValues(t, 12, all, "the old snapshot sees the deleted generation once")
	require.EqualValues(t, 12, cur)
	require.NoError(t, old.Commit(ctx))
	kept, copied, attached := counts()
	require.EqualValues(t, 0, kept, "not detached beside a snapshot that could read it")
	require.EqualValues(t, 12, copied, "copied instead")
	require.Equal(t, attached0+1, attached, "its emptied partition waits for the compactor")

	// 2. Alone: kept whole.
	t3 := run(version(t, writeFeats(t, "v2.geojson", fs[:9]), "v2", "30", p), ingest.Written)
	d3, n3 := historyDigest(t, b, `SELECT feature_id, properties, geom FROM geoingest_current_parcels`)
	require.EqualValues(t, 9, n3)
	t4 := run(deleteVersion(t, "d2", "40"), ingest.Retired)
	kept, copied, attached = counts()
	require.EqualValues(t, 1, kept, "the generation's partition is kept as the history")
	require.EqualValues(t, 12, copied, "no row copied")
	require.Equal(t, attached0+1, attached, "detached from parcels")
	var rows, current int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM parcels), (SELECT count(*) FROM geoingest_current_parcels WHERE job_id IS NOT NULL)`).Scan(&rows, &current))
	require.Zero(t, rows)
	require.Zero(t, current)

	for _, c := range []struct {
		at     time.Time
		digest string
		n      int64
	}{{t1, d1, 12}, {t2, "", 0}, {t3, d3, 9}, {t4, "", 0}} {
		d, n := historyDigest(t, b, asOf, c.at)
		require.Equal(t, c.n, n)
		require.Equal(t, c.digest, d)
	}
	var hist int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_history()`).Scan(&hist))
	require.EqualValues(t, 21, hist, "the history: both generations, each once")
	requireVerifyClean(t, b)

	// Prune keeps no superseded version: the first delete's history (the
	// copies) goes with its ledger row; the last delete, the source's
	// newest record, keeps its table, which is dropped with its ledger row.
	pol := ingest.DefaultRetention()
	pol.KeepSuperseded, pol.MinAge = 0, 0
	_, err := b.store.Prune(ctx, pol)
	require.NoError(t, err)
	kept, copied, _ = counts()
	var tables int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'geoingest_store' AND c.relname LIKE 'parcels\_retired\_%'`).Scan(&tables))
	require.Zero(t, copied, "prune removed the copies with the first delete")
	require.EqualValues(t, 1, kept, "the last delete's table is kept")
	require.Equal(t, kept, tables, "every table kept is registered")
	_, err = b.pool.Exec(ctx, `SELECT count(*) FROM geoingest_features_as_of('parcels', $1, 'b', 'parcels/x.geojson')`, t1)
	require.ErrorContains(t, err, "before its retained history")
	requireVerifyClean(t, b)
	{
		_, err = b.pool.Exec(ctx, `DELETE FROM jobs WHERE job_id IN (SELECT retired_by FROM geoingest_retired_tables)`)
		require.NoError(t, err)
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'geoingest_store' AND c.relname LIKE 'parcels\_retired\_%'`).Scan(&tables))
		require.Zero(t, tables, "the table kept goes with the ledger row of the job that retired it")
	}
}
