package postgis

import (
	"context"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// currentDigest is the source's current rows, feature for feature
// (feature id, properties, geometry), as one hash, and their count.
func historyDigest(t *testing.T, b *bundle, query string, args ...any) (string, int64) {
	t.Helper()
	var d string
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT coalesce(md5(string_agg(q.feature_id::text || q.properties::text || md5(ST_AsEWKB(q.geom)), ',' ORDER BY q.feature_id)), ''), count(*)
		FROM (`+query+`) q`, args...).Scan(&d, &n))
	return d, n
}

// TestFeaturesAsOf: after a chain of versions (keyed changes, a full
// replace, a delete, a re-creation), geoingest_features_as_of at the
// time of each version gives, feature for feature, the rows that were
// current then; before the first, nothing. Once prune has removed the
// oldest versions' ledger rows, a time of theirs is refused, and the
// later times still answer right. With own, every version has a table of
// its own and is written whole into it (the old generation retired whole,
// migration 0036), not changed in place: the generations retired whole
// are kept as their detached tables (migration 0046), and prune drops
// those of the jobs it removes.
func TestFeaturesAsOf(t *testing.T) {
	t.Parallel()
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-place", true: "own-tables"}[own], func(t *testing.T) {
			t.Parallel()
			featuresAsOf(t, own)
		})
	}
}

func featuresAsOf(t *testing.T, own bool) {
	b := setup(t)
	if own {
		b.store.OwnPartitionBytes = 1
		b.store.DiffRewriteAbove = -1
	}
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	const cur = `SELECT feature_id, properties, geom FROM geoingest_current_parcels`
	const asOf = `SELECT feature_id, properties, geom FROM geoingest_features_as_of('parcels', $1, 'b', 'parcels/x.geojson')`

	type state struct {
		at     time.Time
		digest string
		n      int64
	}
	var states []state
	snap := func() {
		time.Sleep(20 * time.Millisecond)
		d, n := historyDigest(t, b, cur)
		states = append(states, state{time.Now(), d, n})
		time.Sleep(20 * time.Millisecond)
	}
	before := time.Now()
	time.Sleep(20 * time.Millisecond)
	run := func(j ingest.Job) {
		j.Guards.Off = true // the versions shrink on purpose
		r := b.svc.Run(ctx, j)
		require.NoError(t, r.Err)
		require.Contains(t, []ingest.Outcome{ingest.Written, ingest.Retired}, r.Outcome)
		snap()
	}
	run(version(t, writeFeats(t, "v1.geojson", []feat{
		sq(0, `{"APN":"A-1","n":"a"}`), sq(1, `{"APN":"A-2","n":"b"}`), sq(2, `{"APN":"A-3","n":"c"}`),
		sq(3, `{"APN":"A-4","n":"d"}`), sq(4, `{"APN":"A-5","n":"e"}`),
	}), "v1", "10", p))
	moved := sq(2, `{"APN":"A-3","n":"c"}`)
	moved.W = 0.0052
	run(version(t, writeFeats(t, "v2.geojson", []feat{
		sq(0, `{"APN":"A-1","n":"a"}`), sq(1, `{"APN":"A-2","n":"b2"}`), moved,
		sq(4, `{"APN":"A-5","n":"e"}`), sq(6, `{"APN":"A-7","n":"g"}`), // A-4 removed, A-7 added
	}), "v2", "20", p))
	b.store.FullReplace = true // every row rewritten: the old ones all retired
	run(version(t, writeFeats(t, "v3.geojson", []feat{
		sq(0, `{"APN":"A-1","n":"a3"}`), sq(1, `{"APN":"A-2","n":"b2"}`), sq(6, `{"APN":"A-7","n":"g"}`), sq(7, `{"APN":"A-8","n":"h"}`),
	}), "v3", "30", p))
	b.store.FullReplace = false
	run(version(t, writeFeats(t, "v4.geojson", []feat{
		sq(0, `{"APN":"A-1","n":"a4"}`), sq(1, `{"APN":"A-2","n":"b2"}`), sq(7, `{"APN":"A-8","n":"h"}`),
	}), "v4", "40", p))
	run(deleteVersion(t, "del", "50"))
	run(version(t, writeFeats(t, "v6.geojson", []feat{
		sq(0, `{"APN":"A-1","n":"new"}`), sq(9, `{"APN":"A-9","n":"z"}`),
	}), "v6", "60", p))
	require.EqualValues(t, 0, states[4].n, "the delete left nothing")

	for i, s := range states {
		d, n := historyDigest(t, b, asOf, s.at)
		require.Equal(t, s.n, n, "version %d: rows as of its time", i+1)
		require.Equal(t, s.digest, d, "version %d: the rows as of its time are the rows that were current", i+1)
	}
	_, n := historyDigest(t, b, asOf, before)
	require.Zero(t, n, "nothing before the first version")
	var kept, copied int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM geoingest_retired_tables), (SELECT count(*) FROM feature_history)`).Scan(&kept, &copied))
	if own {
		// v1, v2, v3 and v4 retired whole (the rewrites, the full replace
		// and the delete), each kept as its table when no other session
		// held a snapshot (none here).
		require.EqualValues(t, 4, kept, "the generations retired whole are kept as their tables")
		require.Zero(t, copied, "no row copied")
	} else {
		require.Zero(t, kept, "no table of its own to keep")
	}
	// Every source at once: the same rows.
	d, _ := historyDigest(t, b, `SELECT feature_id, properties, geom FROM geoingest_features_as_of('parcels', $1)`, states[1].at)
	require.Equal(t, states[1].digest, d)

	// Prune: the ledger keeps the newest 2 non-current jobs; the records
	// (and history) of the older ones go, and a time of theirs is refused.
	pol := ingest.DefaultRetention()
	pol.KeepSuperseded, pol.MinAge = 2, 0
	_, err := b.store.Prune(ctx, pol)
	require.NoError(t, err)
	var oldest int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT min(seq) FROM job_changes`).Scan(&oldest))
	require.Greater(t, oldest, int64(2), "prune removed the oldest versions' records")
	require.Less(t, oldest, int64(6))
	for i, s := range states {
		if int64(i+1) < oldest {
			_, err = b.pool.Exec(ctx, `SELECT count(*) FROM geoingest_features_as_of('parcels', $1, 'b', 'parcels/x.geojson')`, s.at)
			require.ErrorContains(t, err, "before its retained history", "version %d after prune", i+1)
			continue
		}
		d, n := historyDigest(t, b, asOf, s.at)
		require.Equal(t, s.n, n)
		require.Equal(t, s.digest, d, "version %d after prune", i+1)
	}
	var orphans int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM feature_history h WHERE NOT EXISTS (SELECT FROM job_changes c WHERE c.job_id = h.retired_by)`).Scan(&orphans))
	require.Zero(t, orphans, "no history outlives its record")
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM feature_history h WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.job_id = h.retired_by))
		+ (SELECT count(*) FROM feature_changes c WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.job_id = c.job_id))`).Scan(&orphans))
	require.Zero(t, orphans, "no change record or history row outlives its job (migration 0039)")
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM geoingest_retired_tables r WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.job_id = r.retired_by))
		+ abs((SELECT count(*) FROM geoingest_retired_tables) - (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		                                                       WHERE n.nspname = 'geoingest_store' AND c.relname LIKE '%\_retired\_%'))`).Scan(&orphans))
	require.Zero(t, orphans, "prune dropped the tables kept as the history of the jobs it removed, and only those (migration 0046)")
	if own {
		var left int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_retired_tables`).Scan(&left))
		require.Less(t, left, kept, "prune removed some of the tables kept")
	}
}

func queryStrings(t *testing.T, b *bundle, q string) []string {
	rows, err := b.pool.Query(context.Background(), q)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}
