package geomio

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/geoingest/geoingest/geomio/shapefile"
	"github.com/stretchr/testify/require"
)

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
