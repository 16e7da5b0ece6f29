package postgis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/parcelchain"
	"github.com/stretchr/testify/require"
)

// feat is a square parcel (parcelchain's): properties, corner, size, and
// whether it is drawn as a bow tie (invalid, repaired by the server).
type feat = parcelchain.Parcel

// sq is a square parcel i of a grid, with properties props.
func sq(i int, props string) feat {
	return feat{Props: props, X: 13 + float64(i)*0.01, Y: 52.5, W: 0.005}
}

func writeFeats(t *testing.T, name string, fs []feat) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, parcelchain.GeoJSON(fs), 0o644))
	return path
}

// featureIDs maps each current parcel's key property to its feature id.
func featureIDs(t *testing.T, b *bundle, prop string) map[string]int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT properties->>$1, feature_id FROM geoingest_current_parcels`, prop)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var id int64
		require.NoError(t, rows.Scan(&k, &id))
		out[k] = id
	}
	require.NoError(t, rows.Err())
	return out
}

func changeKinds(t *testing.T, b *bundle, job string) map[int64]string {
	t.Helper()
	_, fs, err := b.store.JobChanges(context.Background(), job, true)
	require.NoError(t, err)
	out := map[int64]string{}
	for _, f := range fs {
		out[f.FeatureID] = f.Kind
	}
	return out
}

func TestKeyedVersionsKeepIdentityAndRecordChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}

	v1 := writeFeats(t, "v1.geojson", []feat{
		sq(0, `{"APN":"A-1","use":"res","n":"a"}`),
		sq(1, `{"APN":" a-2 ","use":"res","n":"b"}`), // normalised: A-2
		sq(2, `{"APN":"A-3","use":"res","n":"c"}`),
		sq(3, `{"APN":"A-4","use":"res","n":"d"}`),
		sq(4, `{"APN":"-99","use":"res","n":"e"}`),
		sq(5, `{"APN":"-99","use":"res","n":"f"}`),
		sq(6, `{"APN":"A-7","use":"res","n":"g"}`),
	})
	j1 := version(t, v1, "v1", "10", p)
	r1 := b.svc.Run(ctx, j1)
	require.NoError(t, r1.Err)
	ids1 := featureIDs(t, b, "n")
	require.Len(t, ids1, 7)
	c1, fs1, err := b.store.JobChanges(ctx, j1.ID, true)
	require.NoError(t, err)
	require.Equal(t, ingest.ChangeCounts{Added: 7}, c1.Counts, "a source's first version: every feature added")
	require.Empty(t, fs1, "a first version records its counts only")

	moved := sq(2, `{"APN":"A-3","use":"res","n":"c"}`)
	moved.W = 0.0052 // a vertex moved: IoU still high, key matches
	v2 := writeFeats(t, "v2.geojson", []feat{
		sq(8, `{"n":"h","use":"com","APN":"A-8"}`), // added, first in the file
		sq(0, `{"n":"a","use":"res","APN":"A-1"}`), // unchanged: attribute order does not count
		sq(1, `{"APN":"A-2","use":"com","n":"b"}`), // attributes
		moved, // geometry
		sq(4, `{"APN":"-99","use":"res","n":"e"}`), // duplicate key, same content
		sq(5, `{"APN":"-99","use":"res","n":"f"}`), // duplicate key, same content
		sq(6, `{"APN":"A-7","use":"res","n":"g"}`),
		// A-4 removed
	})
	j2 := version(t, v2, "v2", "20", p)
	r2 := b.svc.Run(ctx, j2)
	require.NoError(t, r2.Err)
	require.Equal(t, ingest.Written, r2.Outcome)
	require.NotNil(t, r2.Changes)
	want := ingest.ChangeCounts{Added: 1, Removed: 1, Geometry: 1, Attributes: 1, Unchanged: 4}
	require.Equal(t, want, r2.Changes.Counts)
	require.EqualValues(t, 2, r2.Changes.DuplicateKeys, "the two -99 parcels are reported")
	require.Equal(t, ingest.MatchCounts{Key: 4, Content: 2}, r2.Changes.Matched)

	ids2 := featureIDs(t, b, "n")
	for _, n := range []string{"a", "b", "c", "e", "f", "g"} {
		require.Equal(t, ids1[n], ids2[n], "feature %s keeps its id", n)
	}
	require.NotContains(t, ids2, "d")
	require.NotContains(t, ids1, "h")
	kinds := changeKinds(t, b, j2.ID)
	require.Equal(t, map[int64]string{ids2["h"]: "added", ids1["d"]: "removed", ids1["b"]: "attributes", ids1["c"]: "geometry"}, kinds)

	c2, _, err := b.store.JobChanges(ctx, j2.ID, false)
	require.NoError(t, err)
	require.Equal(t, want, c2.Counts)
	require.Equal(t, j1.ID, c2.Base)

	// A redelivery records nothing twice; a late older version records
	// nothing.
	require.True(t, b.svc.Run(ctx, version(t, v2, "v2", "20", p)).Outcome.Duplicate())
	old := version(t, writeFeats(t, "v0.geojson", []feat{sq(0, `{"APN":"Z"}`)}), "v0", "05", p)
	require.Equal(t, ingest.Superseded, b.svc.Run(ctx, old).Outcome)
	_, _, err = b.store.JobChanges(ctx, old.ID, false)
	require.ErrorIs(t, err, ingest.ErrNoChanges)
	var n int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_changes WHERE job_id = $1`, j2.ID).Scan(&n))
	require.EqualValues(t, 4, n)
	requireVerified(t, b)

	// duplicate-keys=fail makes the same version fail, and writes nothing.
	pf := p
	pf.DuplicateKeys = ingest.DuplicateKeysFail
	r3 := b.svc.Run(ctx, version(t, v2, "v3", "30", pf))
	require.Error(t, r3.Err)
	require.Contains(t, r3.Err.Error(), "not unique")
	require.Equal(t, ids2, featureIDs(t, b, "n"))
}

func TestUnkeyedVersionsMatchByContentThenOverlap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	v1 := writeFeats(t, "v1.geojson", []feat{
		sq(0, `{"n":"a"}`), sq(1, `{"n":"b"}`), sq(2, `{"n":"c"}`),
		{Props: `{"n":"big"}`, X: 14, Y: 52.5, W: 0.01},
	})
	j1 := version(t, v1, "v1", "10", p)
	require.NoError(t, b.svc.Run(ctx, j1).Err)
	ids1 := featureIDs(t, b, "n")

	grown := sq(2, `{"n":"c2"}`)
	grown.W = 0.00505 // IoU 0.98 with c: attributes and geometry both changed
	v2 := writeFeats(t, "v2.geojson", []feat{
		sq(1, `{"n":"b"}`), sq(0, `{"n":"a"}`), // same content, other order
		grown,
		// big is split in two halves
		{Props: `{"n":"west"}`, X: 14, Y: 52.5, W: 0.005},
		{Props: `{"n":"east"}`, X: 14.005, Y: 52.5, W: 0.005},
	})
	j2 := unguarded(version(t, v2, "v2", "20", p)) // the halves of big cover half its area: not the shrink guard's case
	r2 := b.svc.Run(ctx, j2)
	require.NoError(t, r2.Err)
	require.Equal(t, ingest.ChangeCounts{Added: 2, Removed: 1, Geometry: 1, Attributes: 1, Unchanged: 2}, r2.Changes.Counts)
	require.Equal(t, ingest.MatchCounts{Content: 2, Overlap: 1}, r2.Changes.Matched)
	ids2 := featureIDs(t, b, "n")
	require.Equal(t, ids1["a"], ids2["a"])
	require.Equal(t, ids1["b"], ids2["b"])
	require.Equal(t, ids1["c"], ids2["c2"])
	require.Equal(t, "geometry+attributes", changeKinds(t, b, j2.ID)[ids1["c"]])

	// The split is lineage: big -> west, east.
	rows, err := b.pool.Query(ctx, `SELECT old_feature_id, new_feature_id FROM feature_lineage WHERE job_id = $1 ORDER BY new_feature_id`, j2.ID)
	require.NoError(t, err)
	var lineage [][2]int64
	for rows.Next() {
		var o, n int64
		require.NoError(t, rows.Scan(&o, &n))
		lineage = append(lineage, [2]int64{o, n})
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, [][2]int64{{ids1["big"], ids2["west"]}, {ids1["big"], ids2["east"]}}, lineage)
	require.EqualValues(t, 2, r2.Changes.Lineage)

	// And in the changed features JobChanges lists (changes --job, the
	// API): big's successors, each half's predecessor.
	_, feats, err := b.store.JobChanges(ctx, j2.ID, true)
	require.NoError(t, err)
	got := map[int64][2][]int64{}
	for _, f := range feats {
		if len(f.Successors)+len(f.Predecessors) > 0 {
			got[f.FeatureID] = [2][]int64{f.Successors, f.Predecessors}
		}
	}
	halves := []int64{ids2["west"], ids2["east"]}
	slices.Sort(halves)
	require.Equal(t, map[int64][2][]int64{
		ids1["big"]:  {halves, nil},
		ids2["west"]: {nil, {ids1["big"]}},
		ids2["east"]: {nil, {ids1["big"]}},
	}, got)
	requireVerified(t, b)
}

func TestDeleteRecordsRemovedAndFeedResumes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "LISTEN "+ChangesChannel)
	require.NoError(t, err)

	j1 := version(t, squares(t, "v1.geojson", 3, 0.001), "v1", "10", ingest.DefaultParams("parcels"))
	require.NoError(t, b.svc.Run(ctx, j1).Err)
	n, err := conn.Conn().WaitForNotification(ctx)
	require.NoError(t, err)
	require.Contains(t, n.Payload, j1.ID)
	require.Contains(t, n.Payload, `"added":3`)

	feed := feedAfter(t, b, "", 1)
	require.Equal(t, j1.ID, feed[0].Job)
	cursor := feed[0].Cursor

	del := deleteVersion(t, "delete:20", "20")
	res := b.svc.Run(ctx, del)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.ChangeCounts{Removed: 3}, res.Changes.Counts)
	n, err = conn.Conn().WaitForNotification(ctx)
	require.NoError(t, err)
	require.Contains(t, n.Payload, del.ID)

	feed = feedAfter(t, b, cursor, 1) // the feed resumes after the cursor
	require.Equal(t, del.ID, feed[0].Job)
	feed, err = b.store.ChangeFeed(ctx, feed[0].Cursor, 10)
	require.NoError(t, err)
	require.Empty(t, feed)
}

// feedAfter reads the change feed after cursor until it holds want
// records. The feed holds a record back while any older transaction of
// the cluster runs (the other tests' too): it waits, it never skips.
func feedAfter(t *testing.T, b *bundle, cursor string, want int) []ingest.Changes {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		feed, err := b.store.ChangeFeed(context.Background(), cursor, 10)
		require.NoError(t, err)
		require.LessOrEqual(t, len(feed), want)
		if len(feed) == want || time.Now().After(deadline) {
			require.Len(t, feed, want)
			return feed
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChangeFeedRefusesACursorOfAnotherDatabase: a cursor past every
// transaction id the database assigned (one kept from another database,
// or from before a restore) is refused, permanent, where the feed
// waited silently for its ids to catch up; the cursor of the last record
// still reads as an empty feed.
func TestChangeFeedRefusesACursorOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	j := version(t, writeFeats(t, "v1.geojson", []feat{sq(0, `{"n":"a"}`)}), "v1", "10", p)
	require.NoError(t, b.svc.Run(ctx, j).Err)
	last := feedAfter(t, b, "", 1)[0].Cursor

	feed, err := b.store.ChangeFeed(ctx, last, 10)
	require.NoError(t, err)
	require.Empty(t, feed)
	for _, c := range []string{"9000000000000", "18446744073709551615"} {
		_, err = b.store.ChangeFeed(ctx, c, 10)
		require.ErrorContains(t, err, "change feed cursor "+c+": no record of this database has it", c)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), c)
	}
}
