package postgis

import (
	"context"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/stretchr/testify/require"
)

// TestMaintainerUpgradesMatchHashes: rows whose match hashes predate
// migration 0044 (MD5, as TestMatchAcrossTheHashUpgrade makes them) or
// were never stored are rewritten to 0044's form by the maintainer, a
// batch at a time: a batch leaves a source that a write gate holds alone
// at once (nothing done, no wait); a batch reads its rows after the
// cursor; a walk stopped part-way and started again finishes; a second
// walk rewrites nothing; every row then holds the server's own hashes,
// and the next version records exactly its one change, verify clean.
//
// Both storages: a generation in the shared partition (30 rows, walked
// by its job_ref index, a batch its n rows) and one in a partition of
// its own (400 rows, walked by ranges of blocks since 0048, a batch the
// blocks that hold about n rows; a cursor of 0046's form, the last row
// read, resumes after that row).
func TestMaintainerUpgradesMatchHashes(t *testing.T) {
	t.Parallel()
	t.Run("shared", func(t *testing.T) { t.Parallel(); testMaintainerUpgradesMatchHashes(t, false) })
	t.Run("own", func(t *testing.T) { t.Parallel(); testMaintainerUpgradesMatchHashes(t, true) })
}

func testMaintainerUpgradesMatchHashes(t *testing.T, own bool) {
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	total := 30
	if own {
		total = 400
		b.store.OwnPartitionBytes = 1
	}
	c := newChain(11, total)
	require.NoError(t, b.svc.Run(ctx, version(t, writeFeats(t, "v1.geojson", c.Parcels), "v1", "01", p)).Err)
	_, err := b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET geom_hash = md5(ST_AsEWKB(geom))::uuid, props_hash = md5(properties::text)::uuid`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET geom_hash = NULL, props_hash = NULL WHERE feature_index < 3`)
	require.NoError(t, err)
	count := func(q string) (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, q).Scan(&n))
		return n
	}
	stale := func() int {
		return count(`SELECT count(*) FROM geoingest_store.parcels WHERE geom_hash IS NULL OR geom_hash >= geoingest_hash_form_end()
			OR props_hash IS NULL OR props_hash >= geoingest_hash_form_end()`)
	}
	require.Equal(t, total, stale())
	var job string
	var ref int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT j.job_id, j.job_ref FROM sources s JOIN jobs j ON j.job_id = s.current_job_id`).Scan(&job, &ref))
	require.Equal(t, own, ref > 0, "the generation's storage")

	// A write gate holds the source.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM sources FOR UPDATE`)
	require.NoError(t, err)
	t0 := time.Now()
	r, err := b.store.UpgradeHashes(ctx, job, "", 10)
	require.NoError(t, err)
	require.True(t, r.Busy)
	require.Zero(t, r.Rewritten)
	require.Less(t, time.Since(t0), 5*time.Second, "no wait for the writer")
	require.NoError(t, tx.Rollback(ctx))

	if !own {
		// One batch: its 7 rows.
		r, err = b.store.UpgradeHashes(ctx, job, "", 7)
		require.NoError(t, err)
		require.False(t, r.Busy)
		require.EqualValues(t, 7, r.Rewritten)
		require.NotEmpty(t, r.Next)
		require.Equal(t, 23, stale())
	} else {
		// A batch reads the rows of its blocks, not the table's: walked in
		// batches of 7 rows, the first batch that finds stale rows (the
		// first blocks may hold only the dead versions the UPDATE above
		// left) rewrites some, not all.
		cur := ""
		for {
			r, err = b.store.UpgradeHashes(ctx, job, cur, 7)
			require.NoError(t, err)
			require.False(t, r.Busy)
			require.NotEmpty(t, r.Next, "the walk ended without rewriting")
			cur = r.Next
			if r.Rewritten > 0 {
				break
			}
		}
		require.Less(t, r.Rewritten, int64(total/2), "one batch reads some blocks, not the table")
		require.Equal(t, total-int(r.Rewritten), stale())
		// A cursor of 0046's form, the last row read (here a stale row half
		// way): the stale rows up to it are left for another walk, all
		// after it rewritten.
		var cursor string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT ctid::text FROM geoingest_store.parcels
			WHERE geom_hash IS NULL OR geom_hash >= geoingest_hash_form_end() OR props_hash IS NULL OR props_hash >= geoingest_hash_form_end()
			ORDER BY ctid OFFSET $1 LIMIT 1`, stale()/2).Scan(&cursor))
		before := count(`SELECT count(*) FROM geoingest_store.parcels WHERE ctid <= '` + cursor + `'
			AND (geom_hash IS NULL OR geom_hash >= geoingest_hash_form_end() OR props_hash IS NULL OR props_hash >= geoingest_hash_form_end())`)
		require.Positive(t, before, "stale rows up to the cursor")
		prior := stale()
		var rewritten int64
		for cur := cursor; cur != ""; {
			r, err := b.store.UpgradeHashes(ctx, job, cur, 1000)
			require.NoError(t, err)
			rewritten += r.Rewritten
			cur = r.Next
		}
		require.Equal(t, before, stale(), "the rows up to the cursor are left")
		require.EqualValues(t, prior-before, rewritten, "every stale row after the cursor, once")
		require.Positive(t, rewritten)
	}

	// The maintainer, stopped part-way and started again.
	m := &ingest.Maintainer{Hashes: b.store, HashEvery: time.Hour, HashBatch: 4}
	m.Start(ctx)
	time.Sleep(5 * time.Millisecond)
	m.Stop()
	// Its rounds come every 200 ms, not every hour: the stopped one's
	// cancelled batch can still hold the source's row lock on the server
	// when this one's first round starts (a loaded machine: seen in CI),
	// and a batch that finds the source held leaves it to the next round.
	m = &ingest.Maintainer{Hashes: b.store, HashEvery: 200 * time.Millisecond, HashBatch: 4}
	m.Start(ctx)
	require.Eventually(t, func() bool { return stale() == 0 }, time.Minute, 20*time.Millisecond)
	m.Stop()
	require.Equal(t, total, count(`SELECT count(*) FROM geoingest_store.parcels
		WHERE geom_hash = geoingest_geom_hash(geom) AND props_hash = geoingest_props_hash(properties)`), "the server's own hashes")

	// Idempotent: a second walk rewrites nothing.
	var again int64
	for cur := ""; ; {
		r, err := b.store.UpgradeHashes(ctx, job, cur, 4)
		require.NoError(t, err)
		again += r.Rewritten
		if cur = r.Next; cur == "" {
			break
		}
	}
	require.Zero(t, again)

	fs := append([]feat(nil), c.Parcels...)
	fs[0].Props = `{"APN":"P-1","use":"com","v":0}`
	res := b.svc.Run(ctx, version(t, writeFeats(t, "v2.geojson", fs), "v2", "02", p))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: int64(total - 1)}, res.Changes.Counts)
	requireVerified(t, b)
}

// BenchmarkMatchHashUpgrade: what the maintainer's rewrite of
// GEOINGEST_BENCH_N (default 20,000) parcels' MD5 match hashes costs
// (walk, in batches of DefaultHashBatch), against what the server spends
// hashing those rows again at every later version without it (rehash),
// and what finding that a generation needs no rewrite costs
// (check-clean).
func BenchmarkMatchHashUpgrade(b *testing.B) {
	ctx := context.Background()
	svc := setupBench(b)
	n := benchN(20000)
	path := b.TempDir() + "/big.geojson"
	writeBenchParcels(b, path, n, false)
	src, f, err := localfs.Files{}.Source(path)
	if err != nil {
		b.Fatal(err)
	}
	j, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
	if err != nil {
		b.Fatal(err)
	}
	if r := svc.Run(ctx, j); r.Err != nil {
		b.Fatal(r.Err)
	}
	job := j.ID
	pool := svc.Store.(*Store).pool
	st := svc.Store.(*Store)
	b.Run("check-clean", func(b *testing.B) {
		// What a batch command pays at its end for a generation it wrote
		// that holds nothing to rewrite (FinishHashes): one read of its rows.
		for i := 0; i < b.N; i++ {
			old, err := st.HashesOld(ctx, job)
			if err != nil || old {
				b.Fatal(old, err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e6/float64(n), "s/1M-rows")
	})
	b.Run("rehash", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := pool.Exec(ctx, `SELECT count(geoingest_geom_hash(geom)), count(geoingest_props_hash(properties)) FROM geoingest_store.parcels`); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e6/float64(n), "s/1M-rows")
	})
	b.Run("walk", func(b *testing.B) {
		var spent time.Duration
		for i := 0; i < b.N; i++ {
			if _, err := pool.Exec(ctx, `UPDATE geoingest_store.parcels SET geom_hash = md5(ST_AsEWKB(geom))::uuid, props_hash = md5(properties::text)::uuid`); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `VACUUM geoingest_store.parcels`); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for cur := ""; ; {
				r, err := st.UpgradeHashes(ctx, job, cur, ingest.DefaultHashBatch)
				if err != nil {
					b.Fatal(err)
				}
				if cur = r.Next; cur == "" {
					break
				}
			}
			spent += time.Since(start)
		}
		b.ReportMetric(spent.Seconds()/float64(b.N)*1e6/float64(n), "s/1M-rows")
	})
}
