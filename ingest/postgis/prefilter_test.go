package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// prefilterPair is a store with the prefilter on (b) and an empty one for
// the oracle.
type prefilterPair struct {
	b, empty *bundle
	seq      int
	noGuards bool // b's jobs run with the guards off
}

func newPrefilterPair(t *testing.T) *prefilterPair {
	b, empty := setup(t), setup(t)
	return &prefilterPair{b: b, empty: empty}
}

// step writes the GeoJSON text as the next version of parcels/x.geojson
// (always named x.geojson, as a bucket's object is) under p, checks the
// oracle (the current rows, the ledger and the job's stats, counters and
// layers equal a full load's into an empty database; verify clean) and
// returns how many features the prefilter kept by their bytes.
func (pp *prefilterPair) step(t *testing.T, text string, p ingest.Params) int64 {
	t.Helper()
	ctx := context.Background()
	pp.seq++
	path := filepath.Join(t.TempDir(), "x.geojson")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	pp.b.store.prefilterKept.Store(0)
	job := version(t, path, fmt.Sprint("v", pp.seq), fmt.Sprintf("%04d", pp.seq), p)
	job.Guards.Off = pp.noGuards
	res := pp.b.svc.Run(ctx, job)
	require.NoError(t, res.Err, "version %d", pp.seq)
	require.Equal(t, ingest.Written, res.Outcome, "version %d", pp.seq)
	pp.requireOracle(t, path, p)
	return pp.b.store.prefilterKept.Load()
}

// requireOracle checks b's current generation against a full load of path.
func (pp *prefilterPair) requireOracle(t *testing.T, path string, p ingest.Params) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pp.empty.svc.Run(ctx, version(t, path, "full", "0001", p)).Err)
	got, gc, ga, gs := currentRows(t, pp.b)
	want, wc, wa, ws := currentRows(t, pp.empty)
	require.Equal(t, want, got, "version %d: the current rows are a full load's", pp.seq)
	require.Equal(t, wc, gc, "version %d: the ledger's count", pp.seq)
	require.InEpsilon(t, wa, ga, 1e-9, "version %d: the ledger's area", pp.seq)
	require.Equal(t, ws, gs, "version %d: the ledger's checksum", pp.seq)
	require.Equal(t, jobFacts(t, pp.empty), jobFacts(t, pp.b), "version %d: the job's stats, counters and layers", pp.seq)
	requireVerified(t, pp.b)
	_, err := pp.empty.pool.Exec(ctx, `TRUNCATE jobs, claims, sources, job_changes, feature_changes, feature_lineage CASCADE`)
	require.NoError(t, err)
	_, err = pp.empty.pool.Exec(ctx, `DELETE FROM parcels`)
	require.NoError(t, err)
}

// collection is a FeatureCollection of the features' texts, with an
// optional crs member first.
func collection(crs string, fs ...string) string {
	head := `{"type":"FeatureCollection",`
	if crs != "" {
		head += `"crs":{"type":"name","properties":{"name":"` + crs + `"}},`
	}
	return head + `"features":[` + strings.Join(fs, ",") + `]}`
}

// square is a GeoJSON Feature: square i, with props.
func square(i int, props string) string {
	x := 13.0 + float64(i)*0.01
	return fmt.Sprintf(`{"type":"Feature","properties":%s,"geometry":{"type":"Polygon","coordinates":[[[%g,52.5],[%g,52.5],[%g,52.505],[%g,52.505],[%g,52.5]]]}}`,
		props, x, x+0.005, x+0.005, x, x)
}

func squareTexts(n int, props func(i int) string) []string {
	var fs []string
	for i := 0; i < n; i++ {
		fs = append(fs, square(i, props(i)))
	}
	return fs
}

// TestPrefilterSaltChange: a version whose salt differs (a crs member that
// names the same CRS, another match threshold) matches no row by its bytes
// and is read whole, and still equals a full load; a version under the
// salt of rows written before is prefiltered again.
func TestPrefilterSaltChange(t *testing.T) {
	t.Parallel()
	pp := newPrefilterPair(t)
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	props := func(v int) func(i int) string {
		return func(i int) string {
			if i%7 == v%7 {
				return fmt.Sprintf(`{"APN":"A-%d","v":%d}`, i, v)
			}
			return fmt.Sprintf(`{"APN":"A-%d","v":0}`, i)
		}
	}
	require.Zero(t, pp.step(t, collection("", squareTexts(30, props(0))...), p))
	require.Positive(t, pp.step(t, collection("", squareTexts(30, props(1))...), p), "the same salt: kept by their bytes")
	require.Zero(t, pp.step(t, collection("urn:ogc:def:crs:OGC:1.3:CRS84", squareTexts(30, props(2))...), p),
		"another crs member: another salt")
	// The rows the last version wrote are under the crs member's salt.
	require.Positive(t, pp.step(t, collection("urn:ogc:def:crs:OGC:1.3:CRS84", squareTexts(30, props(2))...), p))
	q := p
	q.MatchIoU = 0.8
	require.Zero(t, pp.step(t, collection("urn:ogc:def:crs:OGC:1.3:CRS84", squareTexts(30, props(3))...), q),
		"other parameters: another salt")
}

// TestPrefilterRepeatedFeatures: features with the same bytes, repeated in
// a version and among the rows, keyed and not: the match pairs them as a
// full read does (the kept ones listed with their rows' match columns); a
// kept feature the match leaves unpaired (its content's rows taken by
// features before it) is added from its row; a feature's bytes that are
// several rows' take one of them.
func TestPrefilterRepeatedFeatures(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			pp := newPrefilterPair(t)
			pp.noGuards = true // versions that shrink
			p := ingest.DefaultParams("parcels")
			if keyed {
				p.Key = []string{"APN"}
			}
			a, b, c := square(1, `{"APN":"-99","n":1}`), square(2, `{"APN":"B","n":2}`), square(3, `{"APN":"C","n":3}`)
			// a's content in other bytes (a space): parsed, never kept.
			a2 := strings.Replace(a, `"properties":`, `"properties": `, 1)
			d := square(4, `{"APN":"-99","n":4}`)
			require.Zero(t, pp.step(t, collection("", a, a, b, c, d), p))
			require.EqualValues(t, 5, pp.step(t, collection("", a, b, a, c, d), p))
			require.EqualValues(t, 4, pp.step(t, collection("", a2, a, a, b, c), p),
				"a's two rows and three features of its content: the last one, kept, is added from a row")
			require.EqualValues(t, 2, pp.step(t, collection("", a, a2, b), p), "a's bytes are three rows': one taken")
			require.EqualValues(t, 1, pp.step(t, collection("", a2, a, square(5, `{"APN":"E","n":5}`)), p))
		})
	}
}

// TestPrefilterHeldVersion: a prefiltered version the guards hold is kept
// whole (its kept features copied from their rows), and once approved
// equals a full load.
func TestPrefilterHeldVersion(t *testing.T) {
	t.Parallel()
	pp := newPrefilterPair(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	props := func(i int) string { return fmt.Sprintf(`{"APN":"A-%d"}`, i) }
	require.Zero(t, pp.step(t, collection("", squareTexts(40, props)...), p))
	// Half of the parcels gone, and one changed: the shrink guard holds it.
	fs := squareTexts(20, props)
	fs[3] = square(3, `{"APN":"A-3","sold":true}`)
	path := filepath.Join(t.TempDir(), "x.geojson")
	require.NoError(t, os.WriteFile(path, []byte(collection("", fs...)), 0o644))
	job := version(t, path, "v2", "0002", p)
	res := pp.b.svc.Run(ctx, job)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Pending, res.Outcome)
	require.EqualValues(t, 19, pp.b.store.prefilterKept.Load())
	var held int64
	require.NoError(t, pp.b.pool.QueryRow(ctx, `SELECT feature_count FROM jobs WHERE job_id = $1`, job.ID).Scan(&held))
	require.EqualValues(t, 20, held)
	_, err := pp.b.svc.Decide(ctx, job.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "the county sold half"})
	require.NoError(t, err)
	pp.seq = 2
	pp.requireOracle(t, path, p)
}

// lineage is, for each current parcel of b (by its content, sorted), the
// content of the row of before whose feature id it has ("new" if none):
// the match's pairs, told apart from the ids a database gives.
func lineage(t *testing.T, b *bundle, before map[int64]string) []string {
	t.Helper()
	now := fidContents(t, b)
	var out []string
	for id, c := range now {
		p, ok := before[id]
		if !ok {
			p = "new"
		}
		out = append(out, c+" <- "+p)
	}
	slices.Sort(out)
	return out
}

// fidContents maps each current parcel's feature id to its content.
func fidContents(t *testing.T, b *bundle) map[int64]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT p.feature_id, p.properties::text || ' ' || md5(ST_AsEWKB(p.geom)) FROM geoingest_current_parcels p`)
	require.NoError(t, err)
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var c string
		require.NoError(t, rows.Scan(&id, &c))
		out[id] = c
	}
	require.NoError(t, rows.Err())
	return out
}

// TestPrefilterBypassEdges: a keyed source's pairs kept by their bytes,
// where their keys are found again (a key repeated among the kept rows,
// placeholder keys, bytes repeated in the file, a kept row's key taken by
// a parsed feature), in versions mostly kept (the reader skips all but the
// features listed as not kept) and mostly not (it skips those listed as
// kept): the match gives the very pairs, feature ids, changelog counts and
// duplicate keys of the same store without the prefilter, and the rows
// and ledger of a full load.
func TestPrefilterBypassEdges(t *testing.T) {
	t.Parallel()
	pp := newPrefilterPair(t)
	pp.noGuards = true
	whole := setup(t)
	whole.store.NoPrefilter = true
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	s := square
	base := func(changed map[int]string) []string {
		var fs []string
		for i := 0; i < 30; i++ {
			props := fmt.Sprintf(`{"APN":"A-%d","v":0}`, i)
			if c, ok := changed[i]; ok {
				props = c
			}
			fs = append(fs, s(i, props))
		}
		return fs
	}
	d1 := s(30, `{"APN":"A-1","n":30}`) // A-1 again, other bytes
	p1, p2 := s(31, `{"APN":"-99","n":31}`), s(32, `{"APN":"-99","n":32}`)
	r := s(33, `{"APN":"R"}`)
	m := s(34, `{"APN":"M"}`)
	x := s(35, `{"n":35}`) // no key
	versions := [][]string{
		append(base(nil), d1, p1, p2, r, m, x),
		// s3 changed, s29 gone; d1 (A-1 twice among the kept rows), p1 and
		// p2 (-99), r twice (the same bytes), m and a new M, x kept; y new.
		append(base(map[int]string{3: `{"APN":"A-3","v":1}`})[:29], d1, p1, p2, r, r, m, s(36, `{"APN":"M","n":36}`), x,
			s(37, `{"APN":"Y"}`)),
		// Back to the first; then most features changed.
		append(base(nil), d1, p1, p2, r, m, x),
		append(base(map[int]string{0: `{"APN":"A-0","v":3}`, 1: `{"APN":"A-1","v":3}`, 2: `{"APN":"A-2","v":3}`,
			4: `{"APN":"A-4","v":3}`, 5: `{"APN":"A-5","v":3}`, 6: `{"APN":"A-6","v":3}`, 7: `{"APN":"A-7","v":3}`,
			8: `{"APN":"A-8","v":3}`, 9: `{"APN":"A-9","v":3}`, 10: `{"APN":"A-10","v":3}`, 11: `{"APN":"A-11","v":3}`,
			12: `{"APN":"A-12","v":3}`, 13: `{"APN":"A-13","v":3}`, 14: `{"APN":"A-14","v":3}`, 15: `{"APN":"A-15","v":3}`,
			16: `{"APN":"A-16","v":3}`, 17: `{"APN":"A-17","v":3}`, 18: `{"APN":"A-18","v":3}`, 19: `{"APN":"A-19","v":3}`,
			20: `{"APN":"A-20","v":3}`, 21: `{"APN":"A-21","v":3}`, 22: `{"APN":"A-22","v":3}`, 23: `{"APN":"A-23","v":3}`,
			24: `{"APN":"A-24","v":3}`}), d1, p1, p2, r, r, m, x),
	}
	for v, fs := range versions {
		text := collection("", fs...)
		beforeP, beforeW := fidContents(t, pp.b), fidContents(t, whole)
		path := filepath.Join(t.TempDir(), "x.geojson")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		wj := version(t, path, fmt.Sprint("v", v+1), fmt.Sprintf("%04d", v+1), p)
		wj.Guards.Off = true
		wres := whole.svc.Run(ctx, wj)
		require.NoError(t, wres.Err, "version %d without the prefilter", v+1)
		kept := pp.step(t, text, p)
		if v > 0 {
			require.Positive(t, kept, "version %d: kept by their bytes", v+1)
		}
		require.Equal(t, lineage(t, whole, beforeW), lineage(t, pp.b, beforeP), "version %d: the pairs (feature ids)", v+1)
		if v == 0 {
			continue
		}
		var got, want string
		q := `SELECT concat_ws(' ', c.added, c.removed, c.geometry, c.attributes, c.unchanged, c.by_key, c.by_content,
		                       c.by_overlap, c.duplicate_keys, c.lineage)
		      FROM job_changes c JOIN sources s ON s.current_job_id = c.job_id`
		require.NoError(t, pp.b.pool.QueryRow(ctx, q).Scan(&got))
		require.NoError(t, whole.pool.QueryRow(ctx, q).Scan(&want))
		require.Equal(t, want, got, "version %d: the changelog's counts", v+1)
	}
}

// TestPrefilterMarksHashesCurrent: the prefilter's join marks a generation
// none of whose rows holds an old-form match hash (migration 0057), and a
// batch command's check (HashesOld) then reads none of it; a generation
// with one such row is not marked, and the check still finds it.
func TestPrefilterMarksHashesCurrent(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			t.Parallel()
			pp := newPrefilterPair(t)
			b := pp.b
			ctx := context.Background()
			p := ingest.DefaultParams("parcels")
			p.Key = []string{"APN"}
			props := func(v int) func(i int) string {
				return func(i int) string { return fmt.Sprintf(`{"APN":"A-%d","v":%d}`, i, v*btoi(i == 3)) }
			}
			require.Zero(t, pp.step(t, collection("", squareTexts(30, props(0))...), p))
			if stale {
				// One row as stored before 0044 (an MD5 in its match hash).
				_, err := b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET props_hash = md5(properties::text)::uuid
					WHERE properties->>'APN' = 'A-7'`)
				require.NoError(t, err)
			}
			require.Positive(t, pp.step(t, collection("", squareTexts(30, props(1))...), p), "prefiltered")
			var job string
			var marked bool
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT s.current_job_id,
				EXISTS (SELECT FROM geoingest_hashes_current h JOIN jobs j ON j.job_ref = h.job_ref WHERE j.job_id = s.current_job_id)
				FROM sources s`).Scan(&job, &marked))
			require.Equal(t, !stale, marked)
			old, err := b.store.HashesOld(ctx, job)
			require.NoError(t, err)
			require.Equal(t, stale, old)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
