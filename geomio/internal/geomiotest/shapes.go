package geomiotest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// ReadAll drains r and returns copies of its features (a Feature is valid
// only until the next Next) and the final error.
func ReadAll(t testing.TB, r core.Reader) ([]core.Feature, error) {
	t.Helper()
	var fs []core.Feature
	for r.Next() {
		fs = append(fs, CloneFeature(r.Feature()))
	}
	return fs, r.Err()
}

// CloneFeature returns a copy of f that shares no memory with the reader.
func CloneFeature(f core.Feature) core.Feature {
	f.Properties = bytes.Clone(f.Properties)
	if f.Geom != nil {
		b, err := ewkb.Marshal(f.Geom, ewkb.NDR)
		if err != nil {
			panic(err)
		}
		if f.Geom, err = ewkb.Unmarshal(b); err != nil {
			panic(err)
		}
	}
	return f
}

// FindFeature returns the first feature whose properties contain s.
func FindFeature(fs []core.Feature, s string) (core.Feature, bool) {
	for _, f := range fs {
		if bytes.Contains(f.Properties, []byte(s)) {
			return f, true
		}
	}
	return core.Feature{}, false
}

// DBFCol is a column of MakeDBF's table.
type DBFCol struct {
	Name     string
	Type     byte
	Length   int
	Decimals int
}

// MakeDBF builds a DBF table; each record is the raw field values, padded,
// with "*" as first value marking a deleted record.
func MakeDBF(ldid byte, cols []DBFCol, recs [][]string) []byte {
	var b bytes.Buffer
	recLen := 1
	for _, c := range cols {
		recLen += c.Length
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
		copy(fd, c.Name)
		fd[11], fd[16], fd[17] = c.Type, byte(c.Length), byte(c.Decimals)
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
			if c.Type == 'N' || c.Type == 'F' {
				v = strings.Repeat(" ", max(c.Length-len(v), 0)) + v
			}
			b.WriteString((v + strings.Repeat(" ", c.Length))[:c.Length])
		}
	}
	b.WriteByte(0x1A)
	return b.Bytes()
}

// MakeSHP builds a .shp of point records.
func MakeSHP(pts [][2]float64) []byte {
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

// PolygonSHP is a .shp of polygons, one record per entry of sizes: a ring
// of that many points (the first closing the ring).
func PolygonSHP(sizes ...int) []byte {
	var b bytes.Buffer
	h := make([]byte, 100)
	binary.BigEndian.PutUint32(h[0:], 9994)
	binary.LittleEndian.PutUint32(h[28:], 1000)
	binary.LittleEndian.PutUint32(h[32:], 5)
	b.Write(h)
	for i, n := range sizes {
		content := 44 + 4 + 16*n
		rec := make([]byte, 8+content)
		binary.BigEndian.PutUint32(rec[0:], uint32(i+1))
		binary.BigEndian.PutUint32(rec[4:], uint32(content/2))
		c := rec[8:]
		binary.LittleEndian.PutUint32(c[0:], 5)
		binary.LittleEndian.PutUint32(c[36:], 1)
		binary.LittleEndian.PutUint32(c[40:], uint32(n))
		for j := 0; j < n; j++ {
			a := -2 * math.Pi * float64(j%(n-1)) / float64(n-1) // clockwise: an outer ring
			binary.LittleEndian.PutUint64(c[48+16*j:], math.Float64bits(math.Cos(a)))
			binary.LittleEndian.PutUint64(c[56+16*j:], math.Float64bits(math.Sin(a)))
		}
		b.Write(rec)
	}
	out := b.Bytes()
	binary.BigEndian.PutUint32(out[24:], uint32(len(out)/2))
	return out
}

// WriteSet writes stem.SHP/.dbf (and extra files) into dir.
func WriteSet(t testing.TB, dir, stem string, shpBytes, dbfBytes []byte, extra map[string]string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, stem+".SHP"), shpBytes, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, stem+".Dbf"), dbfBytes, 0o644))
	for ext, s := range extra {
		require.NoError(t, os.WriteFile(filepath.Join(dir, stem+ext), []byte(s), 0o644))
	}
	return filepath.Join(dir, stem+".SHP")
}

// ESRIWGS84 is the .prj ArcGIS writes for EPSG:4326.
const ESRIWGS84 = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

// ring returns a closed GeoJSON ring of n vertices (n >= 4).
func ring(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n-1; i++ {
		a := 2 * math.Pi * float64(i) / float64(n-1)
		fmt.Fprintf(&b, "[%.6f,%.6f],", math.Cos(a), math.Sin(a))
	}
	b.WriteString("[1.000000,0.000000]]")
	return b.String()
}

// PolygonOf is a GeoJSON polygon of one ring of n vertices (n >= 4).
func PolygonOf(n int) string {
	return `{"type":"Polygon","coordinates":[` + ring(n) + `]}`
}

// FeatureJSONText is a GeoJSON feature of props and geometry.
func FeatureJSONText(props, geometry string) string {
	return `{"type":"Feature","properties":` + props + `,"geometry":` + geometry + `}`
}
