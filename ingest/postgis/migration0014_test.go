package postgis

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// storageState is, for each feature table, partition and view by its
// qualified name, its kind and its file node: a table moved between schemas keeps its file
// (no row copied), a copy would not.
func storageState(t *testing.T, b *bundle) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT n.nspname || '.' || c.relname, c.relkind::text || ' ' || coalesce(pg_relation_filenode(c.oid)::text, '-')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname ~ '^(parcels|admin_units)(_shared|_job_[0-9]+)?$' AND n.nspname IN ('public', 'geoingest_store')`)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var name, where string
		require.NoError(t, rows.Scan(&name, &where))
		out[name] = where
	}
	require.NoError(t, rows.Err())
	return out
}

// featureSums is, per job, the count and checksum of its rows as a
// reader sees them.
func featureSums(t *testing.T, b *bundle) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT j.job_id, count(*)::text || ' ' || sum(geoingest_row_hash(f.feature_index, f.properties, f.geom))::text
		FROM geoingest_features f JOIN jobs j ON j.job_ref = f.job_ref GROUP BY j.job_id`)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var id, s string
		require.NoError(t, rows.Scan(&id, &s))
		out[id] = s
	}
	require.NoError(t, rows.Err())
	return out
}

// TestMigration0014DownAndUp: version 14 moves the feature tables and
// every partition into geoingest_store, without copying them, and puts
// views in their place; down moves them back, as tables, and up again.
// The ledger, each job's rows and verify are unchanged throughout, and
// writes (a shared-partition job, an own-partition job, a replacement)
// work at each end.
func TestMigration0014DownAndUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	url := b.pool.Config().ConnConfig.ConnString()
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	write := func(name string, x, n int, own bool, mtime time.Time) string {
		t.Helper()
		b.store.OwnPartitionBytes = 1 << 40
		if own {
			b.store.OwnPartitionBytes = 1
		}
		p := filepath.Join(dir, name)
		writeSquares(t, p, x, n, name+mtime.String(), mtime)
		res := b.svc.Run(ctx, localJob(t, p, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		require.Equal(t, ingest.Written, res.Outcome)
		return res.JobID
	}
	write("small.geojson", 0, 5, false, base)
	write("own-a.geojson", 1, 40, true, base)
	write("own-b.geojson", 2, 30, true, base)
	// One generation folded into the shared partition.
	_, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 1})
	require.NoError(t, err)

	at14 := storageState(t, b)
	require.Equal(t, "v -", at14["public.parcels"])
	require.Equal(t, "v -", at14["public.admin_units"])
	require.Equal(t, "p -", at14["geoingest_store.parcels"])
	require.Equal(t, "p -", at14["geoingest_store.admin_units"])
	require.Len(t, at14, 7, "the views, the partitioned tables, parcels_shared, admin_units_shared, one own partition: %v", at14)
	ledgerBefore, sumsBefore := ledger(t, b), featureSums(t, b)
	requireVerifyClean(t, b)

	// The qualified names at version 12 of the storage at version 14.
	moved := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if strings.HasPrefix(k, "geoingest_store.") {
				out["public."+strings.TrimPrefix(k, "geoingest_store.")] = v
			}
		}
		return out
	}
	// Migration 0026 recomputes every current checksum without the
	// feature index: compare version 12's ledger with version 25's.
	require.NoError(t, migrations.To(url, 25))
	ledgerAt25, sumsAt25 := ledger(t, b), featureSums(t, b)
	require.NoError(t, migrations.To(url, 12))
	require.Equal(t, moved(at14), storageState(t, b), "the tables moved back with their files")
	var gone bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT to_regnamespace('geoingest_store') IS NULL`).Scan(&gone))
	require.True(t, gone, "geoingest_store left behind")
	require.Equal(t, ledgerAt25, ledger(t, b))
	require.Equal(t, sumsAt25, featureSums(t, b))
	requireVerifyClean(t, b)
	var definer bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT prosecdef FROM pg_proc WHERE proname = 'geoingest_create_job_table'`).Scan(&definer))
	require.True(t, definer, "geoingest_create_job_table as 0005 made it")

	require.NoError(t, migrations.To(url, migrations.Latest()))
	require.Equal(t, at14, storageState(t, b), "the tables moved with their files")
	require.Equal(t, ledgerBefore, ledger(t, b))
	require.Equal(t, sumsBefore, featureSums(t, b))
	requireVerifyClean(t, b)

	// Writes after the round trip: a small job, an own partition, a
	// replacement of an own-partition generation (its partition dropped
	// in geoingest_store), and a fold.
	write("small2.geojson", 3, 4, false, base)
	write("own-c.geojson", 4, 20, true, base)
	write("own-b.geojson", 2, 25, true, base.Add(time.Minute))
	r, err := b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
	require.NoError(t, err)
	require.Len(t, r.Folded, 2) // own-c and own-b's replacement; own-a was folded before
	require.Equal(t, 1, partitions(t, b.pool))
	require.EqualValues(t, 5+40+30+4+20+25-30, countRows(t, b, `SELECT count(*) FROM parcels`))
	requireVerifyClean(t, b)
}

// TestMigration0014OldWriterEntryPoint: a writer of version 13 or before,
// running while the schema migrates, calls geoingest_create_job_table and
// COPYs into the bare name it returns: the name is found (geoingest_store
// joins its transaction's search_path), the job is attached and counted,
// and the search_path is its own again after the transaction.
func TestMigration0014OldWriterEntryPoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var before string
	require.NoError(t, conn.QueryRow(ctx, `SHOW search_path`).Scan(&before))
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	const ref = int64(1) << 33
	var table string
	for _, r := range []int64{-1, ref} {
		require.NoError(t, tx.QueryRow(ctx, `SELECT geoingest_create_job_table('parcels', $1)`, r).Scan(&table))
		_, err = tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{table}.Sanitize()+` (job_ref, feature_index, geom, area_m2)
			VALUES ($1, 0, 'SRID=4326;MULTIPOLYGON(((2 48,2.001 48,2.001 48.001,2 48)))', NULL)`, r)
		require.NoError(t, err, table)
	}
	require.Equal(t, "parcels_job_8589934592", table)
	var written, seen int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT written FROM geoingest_finish_job_table('parcels', $1, false)`, ref).Scan(&written))
	require.EqualValues(t, 1, written)
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM parcels WHERE job_ref = $1`, ref).Scan(&seen))
	require.EqualValues(t, 1, seen)
	require.NoError(t, tx.Commit(ctx))
	var after string
	require.NoError(t, conn.QueryRow(ctx, `SHOW search_path`).Scan(&after))
	require.Equal(t, before, after)
	require.NotContains(t, after, "geoingest_store")
	require.Equal(t, 2, partitions(t, b.pool))
}
