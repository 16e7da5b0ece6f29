package shapefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

func TestShapefileText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, wantEnc string
		want          []string // JSON fragments that must appear in some feature
	}{
		{"grenada_utf8_cyrillic/gre.shp", "UTF-8", []string{`"name_ru":"Гренада"`}},
		{"world_borders_cp1252_noprj_zip/TM_WORLD_BORDERS_SIMPL-0.3.zip", "windows-1252", []string{`"NAME":"Åland Islands"`}},
		{"utf8_emoji_zip/utf.zip", "UTF-8", []string{`{"field":"💩"}`, `{"field":"Hněvošický háj"}`}},
		{"coutwildrnp/coutwildrnp.shp", "ISO-8859-1", []string{`"NAME":"Mount Naomi Wilderness"`}},
	} {
		layer, fs, err := openAll(t, filepath.Join(corpusDir, tc.path), Options{})
		require.NoError(t, err, tc.path)
		require.Equal(t, tc.wantEnc, layer.Encoding, tc.path)
		for _, w := range tc.want {
			_, ok := findFeature(fs, w)
			require.True(t, ok, "%s: no feature with %s", tc.path, w)
		}
	}
}

func TestDBFTypes(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"INT", 'N', 6, 0}, {"DEC", 'N', 8, 2}, {"FLT", 'F', 10, 3}, {"OK", 'L', 1, 0}, {"DAY", 'D', 8, 0}, {"NAME", 'C', 12, 0}}
	dbf := makeDBF(0, cols, [][]string{
		{"42", "3.50", "-1.25e3", "T", "20240131", "Zoë  "},
		{"*", "1", "1", "1", "F", "20240101", "deleted"},
		{"", "*****", "", "?", "", ""},
		{"-7", "0.00", "0", "n", "00000000", `a"b\c`},
	})
	dir := t.TempDir()
	path := writeSet(t, dir, "types", makeSHP([][2]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}}), dbf, map[string]string{".prj": esriWGS84})
	layer, fs, err := openAll(t, path, Options{})
	require.NoError(t, err)
	require.Equal(t, 4326, layer.SRID)
	require.Equal(t, "UTF-8", layer.Encoding)
	require.Len(t, fs, 3, "deleted record skipped")
	require.Equal(t, `{"INT":42,"DEC":3.5,"FLT":-1250,"OK":true,"DAY":"2024-01-31","NAME":"Zoë"}`, string(fs[0].Properties))
	require.Equal(t, `{"INT":null,"DEC":null,"FLT":null,"OK":null,"DAY":null,"NAME":""}`, string(fs[1].Properties))
	require.Equal(t, `{"INT":-7,"DEC":0,"FLT":0,"OK":false,"DAY":null,"NAME":"a\"b\\c"}`, string(fs[2].Properties))
	require.Equal(t, []int64{0, 1, 2}, []int64{fs[0].Index, fs[1].Index, fs[2].Index})
	p := fs[2].Geom.(*geom.Point)
	require.Equal(t, []float64{7, 8}, p.FlatCoords(), "geometry of the record after the deleted one")
}

func TestDBFEncodings(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"NAME", 'C', 10, 0}}
	cp1252 := makeDBF(0x57, cols, [][]string{{"\xc5land"}}) // "Åland" in cp1252
	cp437 := makeDBF(0x01, cols, [][]string{{"\x8eeh"}})    // "Äeh" in cp437
	noLDID := makeDBF(0, cols, [][]string{{"\xc5land"}})
	for _, tc := range []struct {
		name      string
		dbf       []byte
		cpg       string
		opts      Options
		want, enc string
		wantErr   string
		code      string // the error's Code; the message names no CLI flag (the caller words the hint)
	}{
		{name: "ldid 0x57", dbf: cp1252, want: `{"NAME":"Åland"}`, enc: "windows-1252"},
		{name: "ldid 0x01", dbf: cp437, want: `{"NAME":"Äeh"}`, enc: "IBM437"},
		{name: "cpg wins over ldid", dbf: cp437, cpg: "1252", want: `{"NAME":"Žeh"}`, enc: "windows-1252"},
		{name: "default encoding", dbf: noLDID, opts: Options{DefaultEncoding: "ISO-8859-1"}, want: `{"NAME":"Åland"}`, enc: "ISO-8859-1"},
		{name: "invalid utf-8 fails", dbf: noLDID, wantErr: `record 0 field "NAME": invalid utf-8; the file names no text encoding (no .cpg, no language driver id), so it was read as UTF-8: give its encoding as the encoding option`, code: CodeEncoding},
		{name: "cpg utf-8 with latin-1 bytes fails", dbf: cp1252, cpg: "UTF-8\n", wantErr: "invalid utf-8"},
		{name: "byte undefined in cp1252 fails", dbf: makeDBF(0x03, cols, [][]string{{"a\x81"}}), wantErr: "not defined in windows-1252"},
		{name: "unknown cpg fails", dbf: cp1252, cpg: "KLINGON", wantErr: `unknown code page "KLINGON"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			extra := map[string]string{}
			if tc.cpg != "" {
				extra[".CPG"] = tc.cpg
			}
			path := writeSet(t, t.TempDir(), "enc", makeSHP([][2]float64{{1, 2}}), tc.dbf, extra)
			layer, fs, err := openAll(t, path, tc.opts)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.True(t, IsInputError(err))
				require.Contains(t, err.Error(), tc.wantErr)
				require.Contains(t, err.Error(), ".Dbf")
				require.NotContains(t, err.Error(), "--")
				if tc.code != "" {
					var ge *Error
					require.ErrorAs(t, err, &ge)
					require.Equal(t, tc.code, ge.Code)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.enc, layer.Encoding)
			require.Equal(t, tc.want, string(fs[0].Properties))
		})
	}
}

func TestCorruptShapefile(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join(corpusDir, "six_counties/six_counties.shp"))
	require.NoError(t, err)
	dbf, err := os.ReadFile(filepath.Join(corpusDir, "six_counties/six_counties.dbf"))
	require.NoError(t, err)
	hugeCount := bytes.Clone(good)
	binary.LittleEndian.PutUint32(hugeCount[100+8+40:], 0x7fffffff) // NumPoints of record 0
	for _, tc := range []struct {
		name    string
		shp     []byte
		wantErr string
	}{
		{"truncated", good[:len(good)/2], "truncated"},
		{"huge point count", hugeCount, "record 0 at byte 100"},
		{"bad file code", append([]byte{1}, good[1:]...), "bad file code"},
		{"header only", good[:100], ".shp has fewer records than the .dbf"},
	} {
		path := writeSet(t, t.TempDir(), "bad", tc.shp, dbf, nil)
		_, _, err := openAll(t, path, Options{})
		require.Error(t, err, tc.name)
		require.True(t, IsInputError(err), tc.name)
		require.Contains(t, err.Error(), tc.wantErr, tc.name)
	}
	// No .dbf.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.shp"), good, 0o644))
	_, _, err = openAll(t, filepath.Join(dir, "x.shp"), Options{})
	require.ErrorContains(t, err, "missing .dbf")
}

func TestLimitsShapefile(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"ID", 'N', 4, 0}, {"NAME", 'C', 20, 0}, {"CODE", 'C', 4, 0}}
	dbf := makeDBF(0, cols, [][]string{{"1", "short", "a"}, {"2", "a rather long name", "b"}})
	for _, tc := range []struct {
		name string
		lim  Limits
		shp  []byte
		want string
	}{
		{"vertices", Limits{MaxVertices: 5}, polygonSHP(5, 6), "more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)"},
		{"feature bytes", Limits{MaxRecordBytes: 44 + 4 + 16*5}, polygonSHP(5, 6), "more than 128 bytes in one feature, over the limit (raise it with --max-feature-bytes"},
		{"property bytes", Limits{MaxPropertyBytes: 10}, polygonSHP(5, 5), "a property value of more than 10 bytes, over the limit"},
		{"properties", Limits{MaxProperties: 2}, polygonSHP(5, 5), "more than 2 properties"},
		{"features", Limits{MaxFeatures: 1}, polygonSHP(5, 5), "more than 1 features in the upload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim
			if tc.name == "properties" {
				// The first record is under it only with fewer fields:
				// every record has all three, so feature 0 is refused.
				lim.MaxProperties = 2
			}
			path := writeSet(t, t.TempDir(), "parcels", tc.shp, dbf, nil)
			_, fs, err := openAll(t, path, Options{Limits: lim})
			require.True(t, IsLimitError(err), "%v", err)
			idx := 1
			if tc.name == "properties" {
				idx = 0
			}
			require.Len(t, fs, idx)
			require.Contains(t, err.Error(), fmt.Sprintf(`%s: layer "parcels", feature %d: %s`, path, idx, tc.want))
			_, fs, err = openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

// TestLimitsShapefileDeclared: a record's declared sizes are checked
// against the file and the limits before the record is read.
func TestLimitsShapefileDeclared(t *testing.T) {
	t.Parallel()
	dbf := makeDBF(0, []dbfCol{{"ID", 'N', 4, 0}}, [][]string{{"1"}})
	shp := polygonSHP(5)
	lying := bytes.Clone(shp)
	binary.BigEndian.PutUint32(lying[104:], math.MaxUint32-100) // content length: about 8 GiB
	binary.BigEndian.PutUint32(lying[24:], math.MaxUint32)      // file length: 8 GiB
	path := writeSet(t, t.TempDir(), "lying", lying, dbf, nil)
	_, _, err := openAll(t, path, Options{})
	require.ErrorContains(t, err, "record 0 at byte 100: truncated: content length 8589934390, but the file has 128 bytes left")
	// A point count over the limit that the record could hold is the
	// limit's, reported before the record's points are read.
	many := polygonSHP(1000)
	path = writeSet(t, t.TempDir(), "many", many, dbf, nil)
	_, _, err = openAll(t, path, Options{Limits: Limits{MaxVertices: 999}})
	require.ErrorContains(t, err, `layer "many", feature 0: more than 999 vertices`)
}

// TestShapefileRawHash: a shapefile feature's RawHash is its .shp record's
// and .dbf record's bytes under the DBF's fields and encoding: equal
// records hash equal, another point or another attribute otherwise, and so
// does the same record under another field width or another .cpg.
func TestShapefileRawHash(t *testing.T) {
	t.Parallel()
	hashes := func(shpb, dbfb []byte, extra map[string]string) []uint64 {
		t.Helper()
		_, fs, err := openAll(t, writeSet(t, t.TempDir(), "h", shpb, dbfb, extra), Options{})
		require.NoError(t, err)
		var out []uint64
		for _, f := range fs {
			require.NotZero(t, f.RawHash)
			out = append(out, f.RawHash)
		}
		return out
	}
	cols := []dbfCol{{"NAME", 'C', 10, 0}}
	pts := makeSHP([][2]float64{{1, 2}, {3, 4}, {1, 2}, {1, 2}})
	h := hashes(pts, makeDBF(0x57, cols, [][]string{{"a"}, {"a"}, {"a"}, {"b"}}), nil)
	require.Equal(t, h[0], h[2], "the same records")
	require.NotEqual(t, h[0], h[1], "another point")
	require.NotEqual(t, h[0], h[3], "another attribute")
	wide := hashes(pts, makeDBF(0x57, []dbfCol{{"NAME", 'C', 11, 0}}, [][]string{{"a"}, {"a"}, {"a"}, {"b"}}), nil)
	require.NotEqual(t, h[0], wide[0], "another field width")
	cpg := hashes(pts, makeDBF(0x57, cols, [][]string{{"a"}, {"a"}, {"a"}, {"b"}}), map[string]string{".CPG": "UTF-8"})
	require.NotEqual(t, h[0], cpg[0], "another encoding")
	require.Equal(t, h, hashes(pts, makeDBF(0x57, cols, [][]string{{"a"}, {"a"}, {"a"}, {"b"}}), nil), "read again")

	// Options.RawHashOnly: the same hashes, nothing decoded; a deleted
	// record is skipped as it is when decoding.
	dbfb := makeDBF(0x57, cols, [][]string{{"a"}, {"a"}, {"a"}, {"b"}})
	dbfb[len(dbfb)-1-(1+10)*2] = '*' // the third record deleted (before the 0x1A terminator)
	path := writeSet(t, t.TempDir(), "d", pts, dbfb, nil)
	_, full, err := openAll(t, path, Options{})
	require.NoError(t, err)
	_, only, err := openAll(t, path, Options{RawHashOnly: true})
	require.NoError(t, err)
	require.Len(t, full, 3)
	require.Len(t, only, 3)
	for i := range full {
		require.Equal(t, full[i].RawHash, only[i].RawHash)
		require.Equal(t, full[i].Index, only[i].Index)
		require.Nil(t, only[i].Geom)
		require.Nil(t, only[i].Properties)
	}
}

// TestShapefileSkip: with Options.Skip the reader yields every record but
// the skipped ones, with the indexes, hashes and attributes a full read
// gives them (past a deleted record).
func TestShapefileSkip(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"NAME", 'C', 10, 0}}
	pts := makeSHP([][2]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}})
	dbfb := makeDBF(0x57, cols, [][]string{{"a"}, {"b"}, {"c"}, {"d"}})
	dbfb[len(dbfb)-1-(1+10)*3] = '*' // the second record deleted
	path := writeSet(t, t.TempDir(), "s", pts, dbfb, nil)
	_, full, err := openAll(t, path, Options{})
	require.NoError(t, err)
	require.Len(t, full, 3)
	skip := &SkipSet{}
	require.True(t, skip.Add(1))
	_, got, err := openAll(t, path, Options{Skip: skip})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, full[0].Index, got[0].Index)
	require.Equal(t, full[2].Index, got[1].Index)
	require.Equal(t, full[2].RawHash, got[1].RawHash)
	require.Equal(t, full[2].Properties, got[1].Properties)
	require.False(t, skip.Add(2), "the read began: the set is closed")
}
