package geojson

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rawHashes reads path (a FeatureCollection, or a sequence when seq) and
// returns each feature's RawHash.
func rawHashes(t *testing.T, path string, seq bool, lim Limits, tune tuning) []uint64 {
	return rawHashesOf(t, path, seq, Options{Limits: lim}, tune)
}

// rawHashesOf is rawHashes under opts; with opts.RawHashOnly it checks
// that no feature was decoded and the indexes run from 0.
func rawHashesOf(t *testing.T, path string, seq bool, opts Options, tune tuning) []uint64 {
	t.Helper()
	var r Reader
	var err error
	if seq {
		r, err = OpenSeq(path, opts)
	} else {
		r, err = openTuned(path, filepath.Base(path), "x", 0, opts, tune)
	}
	require.NoError(t, err)
	defer r.Close()
	var out []uint64
	for r.Next() {
		f := r.Feature()
		if opts.RawHashOnly {
			require.Nil(t, f.Geom)
			require.Nil(t, f.Properties)
			require.EqualValues(t, len(out), f.Index)
		}
		out = append(out, f.RawHash)
	}
	require.NoError(t, r.Err())
	return out
}

// TestRawHashIsTheFeaturesBytes: a streamed feature's RawHash is its bytes'
// (so the same in a collection and a sequence, in every batch and worker
// layout), differs with the bytes, with one byte of whitespace too, and with
// the limits it was read under; never 0.
func TestRawHashIsTheFeaturesBytes(t *testing.T) {
	a := `{"type":"Feature","properties":{"k":1},"geometry":{"type":"Point","coordinates":[1,2]}}`
	b := `{"type":"Feature","properties":{"k":2},"geometry":{"type":"Point","coordinates":[1,2]}}`
	c := `{"type":"Feature","properties":{"k":1}, "geometry":{"type":"Point","coordinates":[1,2]}}`
	feats := []string{a, b, a, c}
	dir := t.TempDir()
	coll := filepath.Join(dir, "c.geojson")
	require.NoError(t, os.WriteFile(coll, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`]}`), 0o644))
	seqf := filepath.Join(dir, "s.geojsonl")
	require.NoError(t, os.WriteFile(seqf, []byte(strings.Join(feats, "\n")+"\n"), 0o644))

	h := rawHashes(t, coll, false, DefaultLimits, defaultTuning)
	require.Len(t, h, 4)
	for _, x := range h {
		require.NotZero(t, x)
	}
	require.Equal(t, h[0], h[2], "the same bytes")
	require.NotEqual(t, h[0], h[1])
	require.NotEqual(t, h[0], h[3], "one byte of whitespace is another feature's bytes")
	tiny := tuning{BufSize: 64, MaxItems: 1, MinParallel: 1, Workers: 3, CrsWindow: crsWindow}
	require.Equal(t, h, rawHashes(t, coll, false, DefaultLimits, tiny), "whatever the batches and workers")
	require.Equal(t, h, rawHashes(t, seqf, true, DefaultLimits, defaultTuning), "a sequence's records are the same bytes")
	lower := DefaultLimits
	lower.MaxVertices = 10
	other := rawHashes(t, coll, false, lower, defaultTuning)
	require.NotEqual(t, h[0], other[0], "under other limits")
}

// TestRawHashOnly: with Options.RawHashOnly the readers yield the same
// raw hashes, in the same order, without decoding a feature (a first pass
// of the prefilter), a feature that would not decode included.
func TestRawHashOnly(t *testing.T) {
	a := `{"type":"Feature","properties":{"k":1},"geometry":{"type":"Point","coordinates":[1,2]}}`
	b := `{"type":"Feature","properties":{"k":2},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}`
	feats := []string{a, b, a}
	dir := t.TempDir()
	coll := filepath.Join(dir, "c.geojson")
	require.NoError(t, os.WriteFile(coll, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`]}`), 0o644))
	seqf := filepath.Join(dir, "s.geojsonl")
	require.NoError(t, os.WriteFile(seqf, []byte(strings.Join(feats, "\n")+"\n"), 0o644))
	only := Options{Limits: DefaultLimits, RawHashOnly: true}
	tiny := tuning{BufSize: 64, MaxItems: 1, MinParallel: 1, Workers: 3, CrsWindow: crsWindow}
	for _, tune := range []tuning{defaultTuning, tiny} {
		require.Equal(t, rawHashes(t, coll, false, DefaultLimits, tune), rawHashesOf(t, coll, false, only, tune))
	}
	require.Equal(t, rawHashes(t, seqf, true, DefaultLimits, defaultTuning), rawHashesOf(t, seqf, true, only, defaultTuning))

	// A feature that only decoding finds wrong passes the hash-only read.
	bad := filepath.Join(dir, "bad.geojson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection","features":[`+a+`,{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":"x"}}]}`), 0o644))
	require.Len(t, rawHashesOf(t, bad, false, only, defaultTuning), 2)
}

// TestSkip: with Options.Skip the readers yield every feature but the
// skipped ones, with the indexes and hashes of a full read, in every batch
// and worker layout, the last feature skipped included; a skipped feature
// is not decoded (one that would not decode passes); the set is closed
// once the read begins.
func TestSkip(t *testing.T) {
	a := `{"type":"Feature","properties":{"k":1},"geometry":{"type":"Point","coordinates":[1,2]}}`
	b := `{"type":"Feature","properties":{"k":2},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}`
	bad := `{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":"x"}}`
	feats := []string{a, bad, b, a, b, bad}
	dir := t.TempDir()
	coll := filepath.Join(dir, "c.geojson")
	require.NoError(t, os.WriteFile(coll, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`]}`), 0o644))
	seqf := filepath.Join(dir, "s.geojsonl")
	require.NoError(t, os.WriteFile(seqf, []byte(strings.Join(feats, "\n")+"\n"), 0o644))
	only := Options{Limits: DefaultLimits, RawHashOnly: true}
	all := rawHashesOf(t, coll, false, only, defaultTuning)
	tiny := tuning{BufSize: 64, MaxItems: 1, MinParallel: 1, Workers: 3, CrsWindow: crsWindow}
	for _, seq := range []bool{false, true} {
		for _, tune := range []tuning{defaultTuning, tiny} {
			skip := &SkipSet{}
			for _, i := range []int64{1, 3, 5} {
				require.True(t, skip.Add(i))
			}
			var r Reader
			var err error
			opts := Options{Limits: DefaultLimits, Skip: skip}
			if seq {
				r, err = OpenSeq(seqf, opts)
			} else {
				r, err = openTuned(coll, "c.geojson", "x", 0, opts, tune)
			}
			require.NoError(t, err)
			var idx []int64
			for r.Next() {
				f := r.Feature()
				require.NotNil(t, f.Geom)
				require.Equal(t, all[f.Index], f.RawHash)
				idx = append(idx, f.Index)
			}
			require.NoError(t, r.Err(), "the features that would not decode are skipped")
			require.Equal(t, []int64{0, 2, 4}, idx)
			require.False(t, skip.Add(0), "the read began: the set is closed")
			require.True(t, skip.Started())
			r.Close()
		}
	}
}
