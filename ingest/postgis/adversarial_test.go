package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// advChain delivers versions of parcels/x.geojson to three stores: b (the
// prefilter on), whole (the prefilter off: every version read whole) and
// full (every version written whole, GEOINGEST_FULL_REPLACE), and after
// each checks the oracle against a full load into an empty database (the
// prefilterPair's), that b's pairs (feature ids) and changelog are
// whole's, and that b's and whole's change counts are full's.
type advChain struct {
	pp          *prefilterPair
	whole, full *bundle
	seq         int
}

func newAdvChain(t *testing.T) *advChain {
	pp := newPrefilterPair(t)
	pp.noGuards = true // versions that shrink, and change much
	whole, full := setup(t), setup(t)
	whole.store.NoPrefilter = true
	full.store.FullReplace = true
	return &advChain{pp: pp, whole: whole, full: full}
}

// changelog is the current job's change counts, as job_changes holds
// them ("" for none).
func changelog(t *testing.T, b *bundle) string {
	t.Helper()
	var s string
	err := b.pool.QueryRow(context.Background(), `
		SELECT concat_ws(' ', c.added, c.removed, c.geometry, c.attributes, c.unchanged, c.by_key, c.by_content,
		                 c.by_overlap, c.duplicate_keys, c.lineage)
		FROM job_changes c JOIN sources s ON s.current_job_id = c.job_id`).Scan(&s)
	if err != nil {
		require.ErrorContains(t, err, "no rows")
	}
	return s
}

// write writes text as the file name (the layer's name is the file's).
func write(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// step delivers the file as the next version (token v<seq>, a newer
// sequencer) to every store and checks the oracle; it returns how many
// features b's prefilter kept by their bytes.
func (a *advChain) step(t *testing.T, name, text string, p ingest.Params) int64 {
	t.Helper()
	a.seq++
	return a.deliver(t, name, text, p, fmt.Sprint("v", a.seq), fmt.Sprintf("%04d", a.seq), ingest.Written)
}

// deliver delivers the file under the token and sequencer to every store,
// requires the outcome, and checks the oracle against a full load of the
// newest version written (newest, the file of the last Written outcome).
func (a *advChain) deliver(t *testing.T, name, text string, p ingest.Params, token, sequencer string, want ingest.Outcome) int64 {
	t.Helper()
	ctx := context.Background()
	path := write(t, name, text)
	beforeP, beforeW := fidContents(t, a.pp.b), fidContents(t, a.whole)
	run := func(b *bundle) ingest.Result {
		job := version(t, path, token, sequencer, p)
		job.Guards.Off = true
		res := b.svc.Run(ctx, job)
		require.NoError(t, res.Err, "version %s", token)
		require.Equal(t, want, res.Outcome, "version %s", token)
		return res
	}
	fres, wres := run(a.full), run(a.whole)
	a.pp.b.store.prefilterKept.Store(0)
	res := run(a.pp.b)
	kept := a.pp.b.store.prefilterKept.Load()
	require.Equal(t, fres.Changes == nil, res.Changes == nil, "version %s: changes recorded", token)
	if res.Changes != nil {
		require.Equal(t, fres.Changes.Counts, res.Changes.Counts, "version %s: the change counts are the full replace's", token)
		require.Equal(t, fres.Changes.Matched, res.Changes.Matched, "version %s: the match counts are the full replace's", token)
		require.Equal(t, fres.Changes.DuplicateKeys, res.Changes.DuplicateKeys, "version %s: the duplicate keys", token)
		require.Equal(t, fres.Changes.Counts, wres.Changes.Counts, "version %s: without the prefilter", token)
	}
	require.Equal(t, changelog(t, a.whole), changelog(t, a.pp.b), "version %s: the changelog", token)
	require.Equal(t, lineage(t, a.whole, beforeW), lineage(t, a.pp.b, beforeP), "version %s: the pairs (feature ids)", token)
	if want != ingest.Written {
		return kept
	}
	a.pp.seq = a.seq
	a.pp.requireOracle(t, path, p)
	// The whole store is checked against the same full load.
	gotB, _, _, _ := currentRows(t, a.pp.b)
	gotW, wc, wa, ws := currentRows(t, a.whole)
	_, bc, ba, bs := currentRows(t, a.pp.b)
	require.Equal(t, gotB, gotW, "version %s: without the prefilter", token)
	require.Equal(t, bc, wc, "version %s: the ledger's count without the prefilter", token)
	require.InEpsilon(t, ba, wa, 1e-9, "version %s: the ledger's area without the prefilter", token)
	require.Equal(t, bs, ws, "version %s: the ledger's checksum without the prefilter", token)
	requireVerified(t, a.whole)
	requireVerified(t, a.full)
	return kept
}

func keyed(k ...string) ingest.Params {
	p := ingest.DefaultParams("parcels")
	p.Key = k
	return p
}

// TestAdversarialKeyChanges: the key option changes between versions
// (none, APN, STATE|APN, none): another key is another salt and a stored
// key under other field names is recomputed; every version equals a full
// load, its pairs and changelog those of a store without the prefilter.
func TestAdversarialKeyChanges(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	props := func(v int) func(i int) string {
		return func(i int) string {
			state := "CA"
			if i%2 == 0 {
				state = "NV"
			}
			return fmt.Sprintf(`{"STATE":"%s","APN":"A-%d","v":%d}`, state, i%15, v*btoi(i%5 == v%5))
		}
	}
	none := ingest.DefaultParams("parcels")
	for v, p := range []ingest.Params{none, keyed("APN"), keyed("STATE", "APN"), none, keyed("STATE", "APN"), keyed("APN")} {
		a.step(t, "x.geojson", collection("", squareTexts(30, props(v))...), p)
		// The same parameters again: kept by their bytes.
		require.Positive(t, a.step(t, "x.geojson", collection("", squareTexts(30, props(v))...), p), "version %d again", v)
	}
}

// TestAdversarialKeyNormalisation: key values equal once normalised
// (" a-1" and "A-1"; 12.5 and " 12.5") are one key: within a version they
// are duplicates, across versions a pair by key. (A number's scale,
// 12.50 and 12.5, is left out: a full replace's match hashes the two
// alike, the diff's not; see pending/match_core_scale_test.go.)
func TestAdversarialKeyNormalisation(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	p := keyed("APN")
	base := squareTexts(10, func(i int) string { return fmt.Sprintf(`{"APN":"K-%d"}`, i) })
	v := func(extra ...string) string { return collection("", append(append([]string{}, base...), extra...)...) }
	a.step(t, "x.geojson", v(square(20, `{"APN":" a-1"}`)), p)
	a.step(t, "x.geojson", v(square(20, `{"APN":"A-1"}`)), p)
	// Both in one version: a duplicate key.
	a.step(t, "x.geojson", v(square(20, `{"APN":"A-1"}`), square(21, `{"APN":"\ta-1 "}`)), p)
	a.step(t, "x.geojson", v(square(21, `{"APN":"\ta-1 "}`)), p)
	a.step(t, "x.geojson", v(square(21, `{"APN":12.5}`)), p)
	a.step(t, "x.geojson", v(square(21, `{"APN":" 12.5"}`), square(22, `{"APN":"k-3 "}`)), p)
	a.step(t, "x.geojson", v(square(21, `{"APN":" 12.5"}`), square(22, `{"APN":"k-3 "}`), square(23, `{"APN":12.5}`)), p)
}

// TestAdversarialKeyTypes: a key that is a number in one version and a
// string in the next ("12" and 12), and keys that are missing, null or
// empty.
func TestAdversarialKeyTypes(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	p := keyed("APN")
	num := squareTexts(12, func(i int) string { return fmt.Sprintf(`{"APN":%d}`, i+10) })
	str := squareTexts(12, func(i int) string { return fmt.Sprintf(`{"APN":"%d"}`, i+10) })
	mixed := squareTexts(12, func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf(`{"APN":%d}`, i+10)
		case 1:
			return fmt.Sprintf(`{"APN":"%d"}`, i+10)
		case 2:
			return `{"APN":null,"i":` + fmt.Sprint(i) + `}`
		}
		return `{"APN":"","i":` + fmt.Sprint(i) + `}`
	})
	for _, fs := range [][]string{num, str, num, mixed, str, mixed, mixed} {
		a.step(t, "x.geojson", collection("", fs...), p)
	}
}

// TestAdversarialRepeatedBytes: byte-identical features repeated in a
// file (two, three copies) in one version and not the next, keyed and
// not.
func TestAdversarialRepeatedBytes(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			p := keyed(key...)
			fs := squareTexts(8, func(i int) string { return fmt.Sprintf(`{"APN":"R-%d"}`, i) })
			f0, f1 := fs[0], fs[1]
			for _, v := range [][]string{
				fs,
				append([]string{f0, f1}, fs...),     // two copies of f0 and f1
				append([]string{f0, f0, f1}, fs...), // three of f0
				fs,                                  // none
				append(append([]string{}, fs...), f0, f0, f0), // four, at the end
				append(append([]string{}, fs[1:]...), f0, f0), // two, moved
				append(append([]string{}, fs[2:]...), f1),     // f0 gone, f1 once
				append(append([]string{}, fs...), fs...),      // every feature twice
				fs,
			} {
				a.step(t, "x.geojson", collection("", v...), p)
			}
		})
	}
}

// TestAdversarialPositionAndLayer: features whose bytes are the same but
// whose position in the file, or the file's (the layer's) name, changed.
func TestAdversarialPositionAndLayer(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			p := keyed(key...)
			fs := squareTexts(12, func(i int) string { return fmt.Sprintf(`{"APN":"L-%d"}`, i) })
			rev := make([]string, len(fs))
			for i, f := range fs {
				rev[len(fs)-1-i] = f
			}
			a.step(t, "x.geojson", collection("", fs...), p)
			require.EqualValues(t, 12, a.step(t, "x.geojson", collection("", rev...), p), "reversed: every one kept")
			a.step(t, "y.geojson", collection("", rev...), p) // another layer name
			a.step(t, "y.geojson", collection("", fs[3:]...), p)
			a.step(t, "x.geojson", collection("", fs...), p)
		})
	}
}

// TestAdversarialCollectionAndSequence: the same data as a collection and
// as a GeoJSON sequence under the same source key.
func TestAdversarialCollectionAndSequence(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			p := keyed(key...)
			fs := squareTexts(12, func(i int) string { return fmt.Sprintf(`{"APN":"S-%d"}`, i) })
			edited := append([]string{square(0, `{"APN":"S-0","sold":1}`)}, fs[1:]...)
			a.step(t, "x.geojson", collection("", fs...), p)
			a.step(t, "x.geojson", sequence(fs...), p)
			// The rows kept at v2 keep the collection's salt: none found
			// by their bytes in a sequence (the form is in the salt).
			require.Zero(t, a.step(t, "x.geojson", sequence(edited...), p))
			a.step(t, "x.geojson", collection("", edited...), p)
			a.step(t, "x.geojson", sequence(append(edited, edited[2])...), p)
			a.step(t, "x.geojson", collection("", fs...), p)
		})
	}
}

// TestAdversarialAllUnchanged: a version whose every feature is unchanged
// (the same bytes, a new version token), twice; then the same delivered
// twice (a duplicate) and an older version delivered after a newer one
// (superseded): the current rows stay the newest version's.
func TestAdversarialAllUnchanged(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			p := keyed(key...)
			fs := squareTexts(15, func(i int) string { return fmt.Sprintf(`{"APN":"U-%d"}`, i) })
			v1 := collection("", fs...)
			a.step(t, "x.geojson", v1, p)
			require.EqualValues(t, 15, a.step(t, "x.geojson", v1, p))
			require.EqualValues(t, 15, a.step(t, "x.geojson", v1, p))
			v4 := collection("", append([]string{square(0, `{"APN":"U-0","v":4}`)}, fs[1:]...)...)
			a.step(t, "x.geojson", v4, p)
			// v4 delivered again: a duplicate, stopped at the ledger.
			a.deliver(t, "x.geojson", v4, p, "v4", "0004", ingest.AlreadyPresent)
			// v2 (older) delivered after v4: superseded.
			a.deliver(t, "x.geojson", collection("", fs[:5]...), p, "v2-late", "0002", ingest.Superseded)
			// The oracle still holds for v4, and a next version works.
			a.pp.requireOracle(t, write(t, "x.geojson", v4), p)
			a.step(t, "x.geojson", v1, p)
		})
	}
}

// TestAdversarialRepairedGeometry: invalid geometries (a bow tie, a
// self-touching ring) and a zero-area one, repaired or refused by the
// server: their rows hold no raw hash, so the same bytes again are parsed
// and repaired again, never kept by their bytes.
func TestAdversarialRepairedGeometry(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			p := keyed(key...)
			fs := squareTexts(10, func(i int) string { return fmt.Sprintf(`{"APN":"G-%d"}`, i) })
			bow := `{"type":"Feature","properties":{"APN":"BOW"},"geometry":{"type":"Polygon","coordinates":[[[14,52.5],[14.005,52.505],[14.005,52.5],[14,52.505],[14,52.5]]]}}`
			flat := `{"type":"Feature","properties":{"APN":"FLAT"},"geometry":{"type":"Polygon","coordinates":[[[14.1,52.5],[14.105,52.5],[14.11,52.5],[14.1,52.5]]]}}`
			spike := `{"type":"Feature","properties":{"APN":"SPIKE"},"geometry":{"type":"Polygon","coordinates":[[[14.2,52.5],[14.205,52.5],[14.205,52.505],[14.21,52.51],[14.205,52.505],[14.2,52.505],[14.2,52.5]]]}}`
			withBad := append(append([]string{}, fs...), bow, flat, spike)
			a.step(t, "x.geojson", collection("", withBad...), p)
			kept := a.step(t, "x.geojson", collection("", withBad...), p)
			require.EqualValues(t, 10, kept, "only the valid ones are kept by their bytes")
			var hashed int
			require.NoError(t, a.pp.b.pool.QueryRow(context.Background(), `
				SELECT count(*) FROM geoingest_store.parcels p JOIN sources s ON p.job_ref = geoingest_job_ref(s.current_job_id)
				WHERE p.properties->>'APN' IN ('BOW', 'SPIKE', 'FLAT') AND p.raw_hash IS NOT NULL`).Scan(&hashed))
			require.Zero(t, hashed, "a repaired row's raw hash is cleared")
			a.step(t, "x.geojson", collection("", append(append([]string{}, fs...), bow, bow)...), p)
			a.step(t, "x.geojson", collection("", fs...), p)
			a.step(t, "x.geojson", collection("", withBad...), p)
		})
	}
}

// TestAdversarialPlaceholderKeys: a placeholder key (-99) shared by
// features appears, grows, shrinks to one and disappears, the features'
// bytes otherwise kept.
func TestAdversarialPlaceholderKeys(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	p := keyed("APN")
	f := func(i int, apn string) string { return square(i, fmt.Sprintf(`{"APN":%s,"n":%d}`, apn, i)) }
	base := func(ph map[int]string) []string {
		var out []string
		for i := 0; i < 12; i++ {
			apn := fmt.Sprintf(`"P-%d"`, i)
			if s, ok := ph[i]; ok {
				apn = s
			}
			out = append(out, f(i, apn))
		}
		return out
	}
	for _, ph := range []map[int]string{
		nil,
		{3: `"-99"`},
		{3: `"-99"`, 4: `"-99"`},
		{3: `"-99"`, 4: `"-99"`, 5: `-99`},
		{4: `"-99"`},
		{4: `"-99"`, 7: `" -99 "`},
		nil,
		{1: `"P-2"`}, // P-2 twice: a real key duplicated
		nil,
	} {
		a.step(t, "x.geojson", collection("", base(ph)...), p)
	}
}

// TestAdversarialKeyForms: key values whose normal form the writer and
// the server must agree on (numbers in exponent, scale and sign forms,
// strings with non-ASCII white space and letters), where one side's key
// is the server's (a row without match columns, as written before
// migration 0032: they are computed on the server when a match needs
// them) and the other the writer's: the pairs by key are those of a full
// replace, whose match computes every key on the server.
func TestAdversarialKeyForms(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	p := keyed("APN")
	keys := []string{`1e2`, `100.0`, `-0`, `0.000001`, `1e-7`, `123456789012345678901234567890`, `1.5e300`, `-12.340`,
		`"\u00a0A-1"`, `"a-2\r\n"`, `"stra\u00dfe"`, `"\u0130x"`, `"\uff41-3"`, `"\u00e9t\u00e9"`, `" \t"`, `"\u2028b"`, `"0x10"`}
	version := func(v int) string {
		var fs []string
		for i, k := range keys {
			fs = append(fs, square(i, fmt.Sprintf(`{"APN":%s,"v":%d}`, k, v)))
		}
		return collection("", fs...)
	}
	forget := func() {
		for _, b := range []*bundle{a.pp.b, a.whole} {
			tag, err := b.pool.Exec(context.Background(), `UPDATE geoingest_store.parcels SET match_key = NULL`)
			require.NoError(t, err)
			require.EqualValues(t, len(keys), tag.RowsAffected())
		}
	}
	a.step(t, "x.geojson", version(0), p)
	forget()                              // the old side's keys the server's
	a.step(t, "x.geojson", version(1), p) // against the writer's
	a.step(t, "x.geojson", version(2), p) // the writer's against the writer's
	forget()
	a.step(t, "x.geojson", version(2), p) // unchanged, kept by their bytes
	a.step(t, "x.geojson", version(3), p)
}

// TestAdversarialDeleteThenSameBytes: a source deleted, then delivered
// again with the bytes of its rows of before: nothing is current, so
// nothing is kept by its bytes, and the version equals a full load; the
// one after it is prefiltered against it.
func TestAdversarialDeleteThenSameBytes(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			a := newAdvChain(t)
			ctx := context.Background()
			p := keyed(key...)
			fs := squareTexts(10, func(i int) string { return fmt.Sprintf(`{"APN":"D-%d"}`, i) })
			a.step(t, "x.geojson", collection("", fs...), p)
			a.seq++
			for _, b := range []*bundle{a.pp.b, a.whole, a.full} {
				require.Equal(t, ingest.Retired, b.svc.Run(ctx, deleteVersion(t, fmt.Sprint("d", a.seq), fmt.Sprintf("%04d", a.seq))).Outcome)
			}
			require.Zero(t, a.step(t, "x.geojson", collection("", fs...), p), "no current generation: nothing kept")
			require.EqualValues(t, 9, a.step(t, "x.geojson", collection("", fs[1:]...), p))
		})
	}
}

// TestAdversarialIDKey: a key that names the GeoJSON Feature's id member
// (@id), a number in one version and a string in the next, missing from
// some features, and a property @id already in the file.
func TestAdversarialIDKey(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	p := keyed("@id")
	withID := func(id string, i int, props string) string {
		s := square(i, props)
		if id == "" {
			return s
		}
		return strings.Replace(s, `{"type":"Feature",`, `{"type":"Feature","id":`+id+`,`, 1)
	}
	v := func(form func(i int) string, extra ...string) string {
		var fs []string
		for i := 0; i < 10; i++ {
			fs = append(fs, withID(form(i), i, `{"n":1}`))
		}
		return collection("", append(fs, extra...)...)
	}
	num := func(i int) string { return fmt.Sprint(100 + i) }
	str := func(i int) string { return fmt.Sprintf(`"%d"`, 100+i) }
	some := func(i int) string {
		if i%3 == 0 {
			return ""
		}
		return num(i)
	}
	a.step(t, "x.geojson", v(num), p)
	a.step(t, "x.geojson", v(str), p)
	a.step(t, "x.geojson", v(some, withID("", 20, `{"@id":"105","n":2}`)), p)
	a.step(t, "x.geojson", v(num, withID(`"x"`, 20, `{"@id":"105","n":2}`)), p)
	a.step(t, "x.geojson", v(num), p)
}

// TestAdversarialDuplicateKeysFail: under duplicate-keys=fail, a version
// whose only duplicate key comes from features kept by their bytes (a
// feature's bytes twice, or a kept row's key again once normalised in a
// parsed feature) fails and writes nothing, with the prefilter as
// without it; a version without duplicates after it is written.
func TestAdversarialDuplicateKeysFail(t *testing.T) {
	t.Parallel()
	a := newAdvChain(t)
	ctx := context.Background()
	p := keyed("APN")
	p.DuplicateKeys = ingest.DuplicateKeysFail
	fs := squareTexts(20, func(i int) string { return fmt.Sprintf(`{"APN":"F-%d"}`, i) })
	a.step(t, "x.geojson", collection("", fs...), p)
	for i, text := range []string{
		collection("", append(append([]string{}, fs...), fs[7])...),                        // F-7's bytes twice
		collection("", append(append([]string{}, fs...), square(30, `{"APN":" f-7"}`))...), // F-7 again, normalised
		collection("", append(append([]string{}, fs...), fs[0], fs[0], fs[0])...),
	} {
		path := write(t, "x.geojson", text)
		for _, b := range []*bundle{a.pp.b, a.whole, a.full} {
			before := fidContents(t, b)
			job := version(t, path, fmt.Sprint("dup", i), fmt.Sprintf("%04d", a.seq+1), p)
			job.Guards.Off = true
			res := b.svc.Run(ctx, job)
			require.Error(t, res.Err, "version dup%d", i)
			require.Contains(t, res.Err.Error(), "not unique")
			require.Equal(t, before, fidContents(t, b), "version dup%d: nothing written", i)
			requireVerified(t, b)
		}
	}
	a.step(t, "x.geojson", collection("", fs[1:]...), p)
}
