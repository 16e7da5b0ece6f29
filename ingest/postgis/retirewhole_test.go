package postgis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5"
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

// TestApprovalKeepsTheGenerationWhole: approving a pending version
// retires the generation it replaces as a write does (retirewhole.go):
// alone, that generation's partition is kept as the history, no row
// copied; beside an old snapshot that could still read it, its rows are
// copied, and that snapshot sees it once. Either way the rows as of a
// time before the approval are the replaced generation's, after it the
// approved one's, and verify is clean.
func TestApprovalKeepsTheGenerationWhole(t *testing.T) {
	t.Parallel()
	full := parcelsFile(t, "full.geojson", 200, 13, apn)
	truncated := parcelsFile(t, "truncated.geojson", 10, 13, apn)
	for _, beside := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "beside-a-snapshot"}[beside], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			b.store.OwnPartitionBytes = 1
			p := ingest.DefaultParams("parcels")
			const asOf = `SELECT feature_id, properties, geom FROM geoingest_features_as_of('parcels', $1, 'b', 'parcels/x.geojson')`
			v1 := version(t, full, "v1", "01", p)
			require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
			d1, n1 := historyDigest(t, b, `SELECT feature_id, properties, geom FROM geoingest_current_parcels`)
			require.EqualValues(t, 200, n1)
			v2 := version(t, truncated, "v2", "02", p)
			require.Equal(t, ingest.Pending, b.svc.Run(ctx, v2).Outcome)
			time.Sleep(20 * time.Millisecond)
			before := time.Now()
			time.Sleep(20 * time.Millisecond)
			var old pgx.Tx
			if beside {
				old = oldSnapshot(t, b)
			}

			r, err := b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "the county sold 190 parcels"})
			require.NoError(t, err)
			require.Equal(t, "approved", r.Action)
			require.Equal(t, v1.ID, r.Replaced)
			var kept, copied int64
			if beside {
				// The approved rows were committed at the hold, before
				// this snapshot: attached, they are in its parcels too.
				all, _ := featureRows(t, old)
				require.EqualValues(t, 200+10, all)
				var replaced int64
				require.NoError(t, old.QueryRow(ctx, `SELECT count(*) FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref
					WHERE j.job_id = $1`, v1.ID).Scan(&replaced))
				require.EqualValues(t, 200, replaced, "the old snapshot sees the replaced generation once")
				require.NoError(t, old.Commit(ctx))
			}
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM geoingest_retired_tables),
				(SELECT count(*) FROM feature_history)`).Scan(&kept, &copied))
			if beside {
				require.Zero(t, kept, "not detached beside a snapshot that could read it")
				require.EqualValues(t, 200, copied, "copied instead")
			} else {
				require.EqualValues(t, 1, kept, "the replaced generation's partition is kept as the history")
				require.Zero(t, copied, "no row copied")
			}
			n, cur := current(t, b.pool)
			require.EqualValues(t, 10, n)
			require.Equal(t, v2.ID, cur)
			d, n := historyDigest(t, b, asOf, before)
			require.Equal(t, n1, n, "as of a time before the approval: the replaced generation")
			require.Equal(t, d1, d)
			d2, n2 := historyDigest(t, b, `SELECT feature_id, properties, geom FROM geoingest_current_parcels`)
			d, n = historyDigest(t, b, asOf, time.Now())
			require.EqualValues(t, 10, n2)
			require.Equal(t, n2, n, "after it: the approved one")
			require.Equal(t, d2, d)
			requireVerifyClean(t, b)
		})
	}
}
