package geojson

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// The fast, parallel GeoJSON readers must give what the reference
// readers (legacy_test.go) give: the same layer, the same features (the
// go-geom values deeply equal, the same property bytes, Index and Layer),
// and the same first error, in file order. Where the input is not valid
// JSON, the offset and the wording of the syntax error may differ (the
// splitter finds some of them rather than encoding/json); the rest of the
// message must not.

// readResult is what draining a reader gave.
type readResult struct {
	layer Layer
	feats []Feature
	err   error
}

// testTunings are the ways the differential tests run the new readers:
// as in production, serially with tiny buffers (a feature spans several
// reads, batches end mid-feature), and in parallel with tiny buffers and
// batches of one or a few features.
var testTunings = map[string]tuning{
	"default":         defaultTuning,
	"serial-tiny":     {BufSize: 7, MaxItems: 2, MinParallel: 1 << 62, CrsWindow: 64},
	"parallel-tiny":   {BufSize: 16, MaxItems: 3, MinParallel: 0, Workers: 3, CrsWindow: 64},
	"parallel-single": {BufSize: 1024, MaxItems: 1, MinParallel: 0, Workers: 2, CrsWindow: 64},
	"parallel-large":  {BufSize: 1 << 16, MaxItems: 64, MinParallel: 0, Workers: 4, CrsWindow: 64},
}

func drainReader(r Reader) readResult {
	var res readResult
	for r.Next() {
		res.feats = append(res.feats, geomiotest.CloneFeature(r.Feature()))
	}
	res.err = r.Err()
	res.layer = r.Layer()
	return res
}

// readLegacy reads path with the reference reader.
func readLegacy(t testing.TB, path string, seq bool, opts Options) readResult {
	t.Helper()
	opts.Limits = opts.Limits.WithDefaults()
	var r Reader
	var err error
	if seq {
		r, err = legacyOpenGeoJSONSeq(path, opts)
	} else {
		var gr *legacyGeoJSONReader
		gr, err = legacyOpenGeoJSON(path, opts)
		if err == nil {
			r = gr
		}
	}
	if err != nil {
		return readResult{err: err}
	}
	defer r.Close()
	return drainReader(r)
}

// readTuned reads path with the new reader under tuning tu.
func readTuned(t testing.TB, path string, seq bool, opts Options, tu tuning) readResult {
	t.Helper()
	opts.Limits = opts.Limits.WithDefaults()
	var r Reader
	if seq {
		sr, err := OpenSeq(path, opts)
		if err != nil {
			return readResult{err: err}
		}
		sr.Tune = tu
		r = sr
	} else {
		gr, err := openTuned(path, path, core.LayerName(path), 0, opts, tu)
		if err != nil {
			return readResult{err: err}
		}
		r = gr
	}
	res := drainReader(r)
	require.NoError(t, r.Close())
	return res
}

var atByte = regexp.MustCompile(`at byte \d+`)

// sameError normalises an error message for comparison: byte offsets
// aside, and where the problem is invalid JSON, the wording of the syntax
// error aside (the splitter and encoding/json's stream decoder word some
// differently: "unexpected EOF", "unexpected end of JSON input"), the
// message is the same: same file, same feature, same problem.
func sameError(msg string) string {
	if i := strings.Index(msg, "invalid json"); i >= 0 {
		msg = atByte.ReplaceAllString(msg, "at byte N")
		if i := strings.Index(msg, "invalid json at byte N: "); i >= 0 {
			msg = msg[:i+len("invalid json at byte N")]
		}
	}
	return msg
}

// requireSame fails unless got is what want is.
func requireSame(t testing.TB, want, got readResult) {
	t.Helper()
	if want.err == nil || got.err == nil {
		require.Equal(t, want.err == nil, got.err == nil, "error: want %v, got %v", want.err, got.err)
	} else {
		require.True(t, IsInputError(got.err), "not an input error: %T %v", got.err, got.err)
		require.Equal(t, sameError(want.err.Error()), sameError(got.err.Error()))
	}
	require.Equal(t, want.layer, got.layer)
	require.Equal(t, len(want.feats), len(got.feats), "feature count")
	for i := range want.feats {
		w, g := want.feats[i], got.feats[i]
		require.Equal(t, w.Index, g.Index)
		require.Equal(t, w.Layer, g.Layer)
		require.Equal(t, string(w.Properties), string(g.Properties), "feature %d properties", i)
		if !reflect.DeepEqual(w.Geom, g.Geom) {
			t.Fatalf("feature %d geometry: want %#v, got %#v", i, w.Geom, g.Geom)
		}
	}
}

// checkAllTunings compares every tuning of the new reader with the
// reference on path.
func checkAllTunings(t *testing.T, path string, seq bool, opts Options) readResult {
	t.Helper()
	want := readLegacy(t, path, seq, opts)
	for name, tu := range testTunings {
		t.Run(name, func(t *testing.T) {
			requireSame(t, want, readTuned(t, path, seq, opts, tu))
		})
	}
	return want
}

// TestParallelCorpus: every GeoJSON file of the corpus and the synthetic
// data, read as a FeatureCollection and (rewritten one feature per line)
// as a sequence.
func TestParallelCorpus(t *testing.T) {
	t.Parallel()
	var files []string
	for _, g := range []string{"../../testdata/corpus/*/*.json", "../../testdata/corpus/*/*.geojson", "../../testdata/synthetic/*.geojson"} {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.GreaterOrEqual(t, len(files), 8)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			want := checkAllTunings(t, f, false, Options{})
			if want.err != nil {
				return
			}
			// The same features as a sequence: the reference decoding
			// of each line of the new file.
			require.NotEmpty(t, want.feats)
			seq := filepath.Join(t.TempDir(), "f.geojsonl")
			require.NoError(t, os.WriteFile(seq, []byte(asSequence(t, f)), 0o644))
			checkAllTunings(t, seq, true, Options{SourceSRID: want.layer.SRID})
		})
	}
}

// asSequence rewrites the FeatureCollection at path as GeoJSON lines.
func asSequence(t testing.TB, path string) string {
	r, err := legacyOpenGeoJSON(path, Options{Limits: DefaultLimits})
	require.NoError(t, err)
	defer r.Close()
	var sb strings.Builder
	for r.dec.More() {
		var fj featureJSON
		require.NoError(t, r.dec.Decode(&fj))
		fmt.Fprintf(&sb, `{"type":%q,"properties":%s,"geometry":%s}`+"\n", fj.Type, orNull(fj.Properties), orNull(fj.Geometry))
	}
	return sb.String()
}

func orNull(b []byte) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

const (
	feat1 = `{"type":"Feature","properties":{"a":1},"geometry":` + sq + `}`
	feat2 = `{"type":"Feature","properties":{"s":"x"},"geometry":{"type":"Point","coordinates":[1,2]}}`
)

// TestParallelEdgeCases compares the readers on crafted collections and
// sequences, valid and not.
func TestParallelEdgeCases(t *testing.T) {
	t.Parallel()
	many := func(n int, f string) string {
		fs := make([]string, n)
		for i := range fs {
			fs[i] = f
		}
		return strings.Join(fs, ",\n")
	}
	bad := `{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]}}`
	for _, tc := range []struct {
		name, content string
		seq           bool
		opts          Options
		wantErr       string // "" for none; checked on the reference too
	}{
		{name: "brackets and braces in escaped strings",
			content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"s":"]}\"],[{\\","t":"\"}\\\"]"},"geometry":` + sq + `},` + feat2 + `]}`},
		{name: "unicode escapes and raw utf-8",
			content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"s":"\u005d\u007d\ud83d\ude00 Mikuláš 😀"},"geometry":null}]}`},
		{name: "members before and after the features",
			content: `{"type":"FeatureCollection","name":"x","bbox":[0,0,1,1],"features":[` + feat1 + `,` + feat2 + `],"foo":{"features":[1,2]},"bar":"]}"}`},
		{name: "crs after the features",
			content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":"Feature","properties":{"crs":"EPSG:4326"},"geometry":null}],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}`},
		{name: "pretty printed", content: "{\n  \"type\": \"FeatureCollection\",\n  \"features\": [\n    {\n      \"type\": \"Feature\",\n      \"properties\": {\n        \"a\": [ 1, 2 ],\n        \"b\": { \"c\" : null }\n      },\n      \"geometry\": {\n        \"type\": \"MultiPolygon\",\n        \"coordinates\": [ [ [ [0, 0], [1, 0], [1, 1], [0, 0] ] ] ]\n      }\n    }\n  ]\n}\n"},
		{name: "byte order mark", content: "\xEF\xBB\xBF" + `{"type":"FeatureCollection","features":[` + feat1 + `,` + bad + `]}`, wantErr: "feature 1"},
		{name: "many features", content: `{"type":"FeatureCollection","features":[` + many(300, feat1) + `]}`},
		{name: "empty features", content: `{"type":"FeatureCollection","features":[ ]}`},
		{name: "bad feature in the middle", content: `{"type":"FeatureCollection","features":[` + many(40, feat1) + `,` + bad + `,` + many(40, feat2) + `]}`, wantErr: "feature 40"},
		{name: "syntax error in the middle", content: `{"type":"FeatureCollection","features":[` + many(20, feat1) + `,{"type":"Feature","properties":{"a":tru},"geometry":null},` + many(20, feat2) + `]}`, wantErr: "feature 20: invalid json"},
		{name: "syntax error in a skipped member", content: `{"type":"FeatureCollection","features":[` + many(5, feat1) + `,{"type":"Feature","id":[1,,2],"geometry":null}]}`, wantErr: "feature 5: invalid json"},
		{name: "mismatched brackets", content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":"Feature","properties":{"a":[1}},"geometry":null}]}`, wantErr: "feature 1: invalid json"},
		{name: "type error", content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":5}]}`, wantErr: "feature 1: invalid json"},
		{name: "scalar element", content: `{"type":"FeatureCollection","features":[` + feat1 + `,17]}`, wantErr: "feature 1: invalid json"},
		{name: "null element", content: `{"type":"FeatureCollection","features":[` + feat1 + `,null]}`, wantErr: `feature 1 at byte`},
		{name: "truncated in a feature", content: `{"type":"FeatureCollection","features":[` + many(30, feat1) + `,{"type":"Feat`, wantErr: "feature 30"},
		{name: "truncated in a string", content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":"Feature","properties":{"s":"]}]}`, wantErr: "feature 1"},
		{name: "truncated after a feature", content: `{"type":"FeatureCollection","features":[` + feat1, wantErr: "invalid json"},
		{name: "truncated after the features", content: `{"type":"FeatureCollection","features":[` + feat1 + `]`, wantErr: "invalid json"},
		{name: "trailing data", content: `{"type":"FeatureCollection","features":[` + feat1 + `]} x`, wantErr: "trailing data"},
		{name: "bad member after the features", content: `{"type":"FeatureCollection","features":[` + feat1 + `],"x":[1,}`, wantErr: "invalid json"},
		{name: "trailing comma", content: `{"type":"FeatureCollection","features":[` + feat1 + `,]}`, wantErr: "invalid json"},
		{name: "missing comma", content: `{"type":"FeatureCollection","features":[` + feat1 + feat2 + `]}`, wantErr: "invalid json"},
		{name: "feature too large", opts: Options{Limits: Limits{MaxRecordBytes: 200}},
			content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":"Feature","properties":{"s":"` + strings.Repeat("x", 70000) + `"},"geometry":null}]}`, wantErr: `feature 1: more than 200 bytes in one feature`},
		{name: "projected without crs", content: `{"type":"FeatureCollection","features":[` + feat1 + `,{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[500000,6000000]}}]}`, wantErr: "outside longitude/latitude range"},
		{name: "odd but valid features",
			content: `{"type":"FeatureCollection","features":[` + strings.Join([]string{
				`{"geometry":{"coordinates":[[[0,0],[1,0],[1,1],[0,0]]],"type":"Polygon","bbox":[0,0,1,1]},"properties":{},"type":"Feature","id":7}`,
				`{"type":"Feature","TYPE":"Feature","properties":{"a":1},"Properties":{"b":2},"geometry":null}`,
				`{"type":"Feature","properties":{"a":1},"properties":{"b":2},"geometry":null}`,
				`{"type":"Featur\u0065","properties":null,"geometry":{"type":"Point","coordinates":[1,2,3,"x",null]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":null}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"MultiLineString","coordinates":[[],[[0,0],[1,1]],[]]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"MultiPoint","coordinates":[[0,0],[1e-3,-0.0]]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"MultiPolygon","coordinates":[[],[[]],[[],[[0,0],[1,0],[0,0]]],[[[0,0],[1,0],[1,1],[0,0]],[],[[0,0],[0.5,0],[0.5,0.5],[0,0]]]]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2],"geometries":[]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[12345678901234567890.5e-18,0.1e1]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1.7976931348623157e308,4.9e-324]}}`,
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1e-400,-0]}}`,
				`{"type":"Feature","properties":{"\u0061":"\/"},"geometry":{"type":"Point","coordinates":[1,2]},"crs":null}`,
			}, ",") + `],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}`},
		{name: "number out of range", content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1e400,0]}}]}`, wantErr: "feature 0"},
		{name: "open ring", content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}}]}`, wantErr: "not closed"},

		{name: "seq: lines", seq: true, content: feat1 + "\n" + feat2 + "\n" + sq + "\n"},
		{name: "seq: rfc 8142 and blank records", seq: true, content: "\x1e" + feat1 + "\r\n\x1e\n \x0b\n\x1e" + feat2 + "\n\n"},
		{name: "seq: byte order mark", seq: true, content: "\xEF\xBB\xBF" + feat1 + "\n" + feat2},
		{name: "seq: bare geometries with members", seq: true, content: `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]],"properties":5,"geometry":"x"}` + "\n" + `{"coordinates":[1,2],"type":"Point"}` + "\n" + `{"type":"GeometryCollection","geometries":[]}` + "\n"},
		{name: "seq: feature with coordinates member", seq: true, content: `{"type":"Feature","coordinates":[1,2],"properties":{"a":1},"geometry":null}`},
		{name: "seq: many", seq: true, content: strings.Repeat(feat1+"\n", 200) + feat2},
		{name: "seq: bad record in the middle", seq: true, content: strings.Repeat(feat1+"\n", 50) + bad + "\n" + strings.Repeat(feat2+"\n", 50), wantErr: "feature 50 at byte"},
		{name: "seq: syntax error", seq: true, content: strings.Repeat(feat1+"\n", 10) + "{]\n" + feat2, wantErr: "feature 10 at byte"},
		{name: "seq: two values in a record", seq: true, content: feat1 + " " + feat2 + "\n", wantErr: "feature 0 at byte 0: invalid json"},
		{name: "seq: truncated", seq: true, content: feat1 + "\n" + feat2[:30], wantErr: "feature 1 at byte"},
		{name: "seq: blank tail without newline", seq: true, content: feat1 + "\n  ", wantErr: "feature 1 at byte"},
		{name: "seq: record too large", seq: true, opts: Options{Limits: Limits{MaxRecordBytes: 120}},
			content: feat1 + "\n" + strings.Repeat(" ", 200) + feat2, wantErr: `feature 1: more than 120 bytes in one feature`},
		{name: "seq: collection record", seq: true, content: feat1 + "\n" + `{"type":"FeatureCollection","features":[]}`, wantErr: `unsupported record type "FeatureCollection"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "a.geojson"
			if tc.seq {
				name = "a.geojsonl"
			}
			path := geomiotest.WriteTemp(t, name, tc.content)
			want := checkAllTunings(t, path, tc.seq, tc.opts)
			if tc.wantErr == "" {
				require.NoError(t, want.err)
			} else {
				require.Error(t, want.err)
				require.Contains(t, want.err.Error(), tc.wantErr)
			}
		})
	}
}

// TestParallelClose: closing a reader in the middle of a large input
// stops its goroutines, and reading stops.
func TestParallelClose(t *testing.T) {
	t.Parallel()
	content := `{"type":"FeatureCollection","features":[` + strings.Repeat(feat1+",", 5000) + feat2 + `]}`
	path := geomiotest.WriteTemp(t, "a.geojson", content)
	for _, tu := range testTunings {
		r, err := Open(path, Options{Limits: DefaultLimits})
		require.NoError(t, err)
		r.Tune = tu
		for i := 0; i < 10; i++ {
			require.True(t, r.Next())
		}
		require.NoError(t, r.Close())
		require.False(t, r.Next())
	}
}

// diffLimits are the limits of the differential fuzz targets, which
// compare decoding with the reference reader: only the byte limits the
// reference reader enforces too are within reach (the others are
// enforced, and fuzzed, by geomio's fuzz targets).
var diffLimits = Limits{MaxUncompressedBytes: 16 << 20, MaxRecordBytes: 1 << 20, MaxEntries: 100,
	MaxVertices: 1 << 40, MaxPropertyBytes: 1 << 40, MaxProperties: 1 << 30}

// fuzzTuning is the tuning the differential fuzz targets run: buffers
// and batches small enough that any input spans several, in parallel.
var fuzzTuning = tuning{BufSize: 32, MaxItems: 2, MinParallel: 0, Workers: 2, CrsWindow: 48}

// FuzzGeoJSONParallel: for any input, the new FeatureCollection reader
// (serially and in parallel) gives what the reference reader gives.
func FuzzGeoJSONParallel(f *testing.F) {
	geomiotest.AddCorpusFiles(f, corpusDir, "*/*.json")
	f.Add([]byte(`{"type":"FeatureCollection","features":[` + feat1 + `,` + feat2 + `],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"s":"]}\"],[{\\"},"geometry":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]],[]],[]]}}]}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[[1,2,3],[4e-1,5.25E+2]]}},{"type":"Feature","geometry":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		watchdog := time.AfterFunc(fuzzInputDeadline, func() { panic(fmt.Sprintf("input took more than %v", fuzzInputDeadline)) })
		defer watchdog.Stop()
		p := filepath.Join(t.TempDir(), "f.geojson")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		opts := Options{Limits: diffLimits}
		want := readLegacy(t, p, false, opts)
		requireSame(t, want, readTuned(t, p, false, opts, defaultTuning))
		got := readTuned(t, p, false, opts, fuzzTuning)
		if got.layer.CRSText != want.layer.CRSText {
			// The crs member taken from the end of the file (a 48-byte
			// window here) was not the one: the reader must fail.
			require.Error(t, got.err, "read with crs %q, the crs is %q", got.layer.CRSText, want.layer.CRSText)
			return
		}
		requireSame(t, want, got)
	})
}

// FuzzGeoJSONSeqParallel is FuzzGeoJSONParallel for sequences.
func FuzzGeoJSONSeqParallel(f *testing.F) {
	f.Add([]byte(feat1 + "\n\x1e" + feat2 + "\r\n\n" + sq))
	f.Add([]byte(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]],"properties":5}` + "\n" + `{"type":"Feature","coordinates":1,"properties":{"a":[1, {"b" : null}]},"geometry":{"coordinates":[1,2],"type":"Point"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		watchdog := time.AfterFunc(fuzzInputDeadline, func() { panic(fmt.Sprintf("input took more than %v", fuzzInputDeadline)) })
		defer watchdog.Stop()
		p := filepath.Join(t.TempDir(), "f.geojsonl")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		opts := Options{Limits: diffLimits}
		want := readLegacy(t, p, true, opts)
		requireSame(t, want, readTuned(t, p, true, opts, defaultTuning))
		requireSame(t, want, readTuned(t, p, true, opts, fuzzTuning))
	})
}

// FuzzScanTopLevelMember: the crs pre-scan finds what the byte-by-byte
// scan found.
func FuzzScanTopLevelMember(f *testing.F) {
	f.Add([]byte(`{"a":{"crs":1},"crs" : {"x":[1,"]"]} }`))
	f.Add([]byte(`{"features":[{"crs":2},{"s":"\"]]"}],"b":"crs","crs":"EPSG:1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.json")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		want, werr := legacyScanTopLevelMember(p, "crs", 64)
		got, gerr := scanTopLevelMember(p, "crs", 64)
		require.Equal(t, werr, gerr)
		require.Equal(t, string(want), string(got))
	})
}

// TestTrailingMember: the backward scan finds the members after the last
// value larger than the window, or gives up.
func TestTrailingMember(t *testing.T) {
	t.Parallel()
	feats := `{"type":"FeatureCollection","features":[` + strings.Repeat(feat1+",", 10) + feat2 + `]`
	for _, tc := range []struct {
		tail, want string
		ok         bool
	}{
		{tail: `}`, want: ``, ok: true},
		{tail: ` , "crs" : {"type":"name","properties":{"name":"EPSG:3857"}} }` + "\n", want: `{"type":"name","properties":{"name":"EPSG:3857"}}`, ok: true},
		{tail: `,"crs":"a","x":[1,{"y":"\\\"]}"}],"crs":"b","n":-1.5e3,"t":true}`, want: `"a"`, ok: true},
		{tail: `,"c\"rs":1,"\u0063rs":2}`, want: ``, ok: true},
		{tail: `,"crs":1} x`, ok: false},
		{tail: `,"crs" 1}`, ok: false},
	} {
		path := geomiotest.WriteTemp(t, "a.geojson", feats+tc.tail)
		raw, ok := trailingMember(path, "crs", 200)
		require.Equal(t, tc.ok, ok, tc.tail)
		require.Equal(t, tc.want, string(raw), tc.tail)
	}
	// A file no larger than the window is scanned forwards instead.
	_, ok := trailingMember(geomiotest.WriteTemp(t, "a.geojson", `{"features":[],"crs":1}`), "crs", 200)
	require.False(t, ok)
}

// TestCRSAfterLargeMember: a crs member after the features array,
// followed by a member larger than the window the reader looks for it
// in, is missed; the reader then fails at the end instead of delivering
// features with the wrong SRID. A crs member in the window is found.
func TestCRSAfterLargeMember(t *testing.T) {
	t.Parallel()
	crs := `"crs":{"type":"name","properties":{"name":"EPSG:3857"}}`
	pt := `{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[500000,6000000]}}`
	feats := `{"type":"FeatureCollection","features":[` + strings.Repeat(pt+",", 20) + pt + `]`
	tu := defaultTuning
	tu.CrsWindow = 300

	path := geomiotest.WriteTemp(t, "a.geojson", feats+`,`+crs+`,"big":"`+strings.Repeat("x", 400)+`"}`)
	want := readLegacy(t, path, false, Options{})
	require.NoError(t, want.err)
	require.Equal(t, 3857, want.layer.SRID)
	got := readTuned(t, path, false, Options{SourceSRID: 3857}, tu)
	require.Error(t, got.err)
	require.Contains(t, got.err.Error(), "put the crs member before the features array")

	path = geomiotest.WriteTemp(t, "a.geojson", feats+`,"big":"`+strings.Repeat("x", 400)+`",`+crs+`}`)
	want = readLegacy(t, path, false, Options{})
	require.NoError(t, want.err)
	requireSame(t, want, readTuned(t, path, false, Options{}, tu))
}
