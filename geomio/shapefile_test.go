package geomio

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/geoingest/geoingest/geomio/shapefile"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// findFeature returns the first feature whose properties contain s.
func findFeature(fs []Feature, s string) (Feature, bool) {
	for _, f := range fs {
		if bytes.Contains(f.Properties, []byte(s)) {
			return f, true
		}
	}
	return Feature{}, false
}

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

type dbfCol struct {
	name     string
	typ      byte
	length   int
	decimals int
}

// makeDBF builds a DBF table; each record is the raw field values, padded,
// with "*" as first value marking a deleted record.
func makeDBF(ldid byte, cols []dbfCol, recs [][]string) []byte {
	var b bytes.Buffer
	recLen := 1
	for _, c := range cols {
		recLen += c.length
	}
	h := make([]byte, 32)
	h[0] = 3
	binary.LittleEndian.PutUint32(h[4:], uint32(len(recs)))
	binary.LittleEndian.PutUint16(h[8:], uint16(33+32*len(cols)))
	binary.LittleEndian.PutUint16(h[10:], uint16(recLen))
	h[29] = ldid
	b.Write(h)
	for _, c := range cols {
		fd := make([]byte, 32)
		copy(fd, c.name)
		fd[11], fd[16], fd[17] = c.typ, byte(c.length), byte(c.decimals)
		b.Write(fd)
	}
	b.WriteByte(0x0D)
	for _, r := range recs {
		flag := " "
		if len(r) > len(cols) {
			flag, r = r[0], r[1:]
		}
		b.WriteString(flag)
		for i, c := range cols {
			v := r[i]
			if c.typ == 'N' || c.typ == 'F' {
				v = strings.Repeat(" ", max(c.length-len(v), 0)) + v
			}
			b.WriteString((v + strings.Repeat(" ", c.length))[:c.length])
		}
	}
	b.WriteByte(0x1A)
	return b.Bytes()
}

// makeSHP builds a .shp of point records.
func makeSHP(pts [][2]float64) []byte {
	var b bytes.Buffer
	h := make([]byte, 100)
	binary.BigEndian.PutUint32(h[0:], 9994)
	binary.BigEndian.PutUint32(h[24:], uint32((100+28*len(pts))/2))
	binary.LittleEndian.PutUint32(h[28:], 1000)
	binary.LittleEndian.PutUint32(h[32:], 1)
	b.Write(h)
	for i, p := range pts {
		rec := make([]byte, 28)
		binary.BigEndian.PutUint32(rec[0:], uint32(i+1))
		binary.BigEndian.PutUint32(rec[4:], 10)
		binary.LittleEndian.PutUint32(rec[8:], 1)
		binary.LittleEndian.PutUint64(rec[12:], math.Float64bits(p[0]))
		binary.LittleEndian.PutUint64(rec[20:], math.Float64bits(p[1]))
		b.Write(rec)
	}
	return b.Bytes()
}

// writeSet writes stem.SHP/.dbf (and extra files) into dir.
func writeSet(t testing.TB, dir, stem string, shpBytes, dbfBytes []byte, extra map[string]string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, stem+".SHP"), shpBytes, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, stem+".Dbf"), dbfBytes, 0o644))
	for ext, s := range extra {
		require.NoError(t, os.WriteFile(filepath.Join(dir, stem+ext), []byte(s), 0o644))
	}
	return filepath.Join(dir, stem+".SHP")
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

// makeZip writes a zip of the given entries (in order).
func makeZip(t testing.TB, entries [][2]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "up.zip")
	f, err := os.Create(p)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return p
}

func TestZip(t *testing.T) {
	t.Parallel()
	cols := []dbfCol{{"ID", 'N', 4, 0}}
	shp2 := string(makeSHP([][2]float64{{1, 1}, {2, 2}}))
	dbf2 := string(makeDBF(0, cols, [][]string{{"1"}, {"2"}}))
	shp1 := string(makeSHP([][2]float64{{3, 3}}))
	dbf1 := string(makeDBF(0, cols, [][]string{{"3"}}))
	prj := esriWGS84

	t.Run("several layers in lexical order", func(t *testing.T) {
		t.Parallel()
		p := makeZip(t, [][2]string{
			{"b/Second.SHP", shp1}, {"b/Second.DBF", dbf1}, {"b/second.Prj", `PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936",DATUM["D_OSGB_1936",SPHEROID["Airy_1830",6377563.396,299.3249646]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",400000.0],PARAMETER["False_Northing",-100000.0],PARAMETER["Central_Meridian",-2.0],PARAMETER["Scale_Factor",0.9996012717],PARAMETER["Latitude_Of_Origin",49.0],UNIT["Meter",1.0]]`},
			{"__MACOSX/a/._First.shp", "junk"}, {"a/First.shp", shp2}, {"a/First.dbf", dbf2}, {"a/First.prj", prj},
			{"a/First.sbn", "ignored"}, {"a/First.shp.xml", "<x/>"},
		})
		r, err := Open(p, Options{})
		require.NoError(t, err)
		var layers []string
		var srids []int
		var idx []int64
		for r.Next() {
			f := r.Feature()
			layers, srids, idx = append(layers, f.Layer), append(srids, r.Layer().SRID), append(idx, f.Index)
		}
		require.NoError(t, r.Err())
		require.Equal(t, []string{"a/First", "a/First", "b/Second"}, layers)
		require.Equal(t, []int{4326, 4326, 27700}, srids)
		require.Equal(t, []int64{0, 1, 2}, idx)
		// Close removes the extraction directory.
		tmp := filepath.Dir(filepath.Dir(r.(*core.LimitedReader).Reader.(*core.MultiReader).Cur.(*shapefile.ShpReader).Files[0].Name()))
		require.DirExists(t, tmp)
		require.NoError(t, r.Close())
		require.NoDirExists(t, tmp)
	})
	for _, tc := range []struct {
		name    string
		entries [][2]string
		opts    Options
		wantErr string
	}{
		{"zip slip", [][2]string{{"../evil.shp", shp1}}, Options{}, "parent directory"},
		{"absolute", [][2]string{{"/etc/evil.shp", shp1}}, Options{}, "absolute path"},
		{"too many entries", [][2]string{{"a.shp", shp1}, {"a.dbf", dbf1}, {"a.txt", ""}}, Options{Limits: Limits{MaxEntries: 2}}, "zip has 3 entries: more than 2 entries, over the limit (raise it with --max-zip-entries"},
		{"total size", [][2]string{{"a.shp", shp1}, {"a.dbf", dbf1}}, Options{Limits: Limits{MaxUncompressedBytes: 150}}, "expands to more than 150 bytes"},
		{"ratio", [][2]string{{"a.shp", shp1}, {"a.dbf", strings.Repeat(" ", 3<<20)}}, Options{}, "compression ratio above 200"},
		// Each entry is under the 1 MiB floor of the per-entry ratio check;
		// together they are a bomb: the whole archive's ratio is checked.
		{"ratio of small entries", manySmallBombEntries(shp1, dbf1, 300), Options{}, "zip expands to more than 200 times its size"},
		{"no shapefile", [][2]string{{"readme.txt", "hi"}}, Options{}, "unsupported format"},
		{"missing dbf", [][2]string{{"x/a.shp", shp1}}, Options{}, "missing .dbf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := makeZip(t, tc.entries)
			_, _, err := openAll(t, p, tc.opts)
			require.Error(t, err)
			require.True(t, IsInputError(err), "%T %v", err, err)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", "hello", "\x89PNG\r\n"} {
		_, _, err := openAll(t, geomiotest.WriteTemp(t, "x.bin", content), Options{})
		require.ErrorContains(t, err, "unsupported format")
		require.True(t, IsInputError(err))
	}
	_, _, err := openAll(t, geomiotest.WriteTemp(t, "x.zip", "not a zip"), Options{})
	require.ErrorContains(t, err, "invalid zip")
}

// manySmallBombEntries is a shapefile set plus n entries of just under
// 1 MiB of zeros each (about 1 KiB deflated).
func manySmallBombEntries(shp, dbf string, n int) [][2]string {
	es := [][2]string{{"a.shp", shp}, {"a.dbf", dbf}}
	zeros := strings.Repeat("\x00", 1<<20-1)
	for i := 0; i < n; i++ {
		es = append(es, [2]string{fmt.Sprintf("pad/p%03d.dbf", i), zeros})
	}
	return es
}

// esriWGS84 is the .prj ArcGIS writes for EPSG:4326.
const esriWGS84 = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

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
}
