package postgis

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/stretchr/testify/require"
)

// A shapefile's DBF record is rendered as JSON with the place of each
// member (geomio.Feature.Members), and the mapping and the drift guard's
// keys read the members from there rather than scanning the record
// (ingest.Applier.ApplyMembers, ingest.KeysReader). The rows written, the
// quarantine and the keys must be the scanning path's.

// dbfField is a DBF field descriptor of the test's table.
type dbfField struct {
	name     string
	typ      byte
	length   int
	decimals int
}

// testDBF builds a DBF table of recs, each value padded to its field.
func testDBF(fields []dbfField, recs [][]string) []byte {
	var b bytes.Buffer
	recLen := 1
	for _, f := range fields {
		recLen += f.length
	}
	h := make([]byte, 32)
	h[0] = 3
	binary.LittleEndian.PutUint32(h[4:], uint32(len(recs)))
	binary.LittleEndian.PutUint16(h[8:], uint16(33+32*len(fields)))
	binary.LittleEndian.PutUint16(h[10:], uint16(recLen))
	b.Write(h)
	for _, f := range fields {
		fd := make([]byte, 32)
		copy(fd, f.name)
		fd[11], fd[16], fd[17] = f.typ, byte(f.length), byte(f.decimals)
		b.Write(fd)
	}
	b.WriteByte(0x0D)
	for _, r := range recs {
		b.WriteByte(' ')
		for i, f := range fields {
			v := r[i]
			if f.typ == 'N' {
				v = strings.Repeat(" ", max(f.length-len(v), 0)) + v
			}
			b.WriteString((v + strings.Repeat(" ", f.length))[:f.length])
		}
	}
	b.WriteByte(0x1A)
	return b.Bytes()
}

// testSHP is a .shp of n small squares, the i-th at longitude i/1000.
func testSHP(n int) []byte {
	var b bytes.Buffer
	h := make([]byte, 100)
	binary.BigEndian.PutUint32(h[0:], 9994)
	binary.LittleEndian.PutUint32(h[28:], 1000)
	binary.LittleEndian.PutUint32(h[32:], 5)
	b.Write(h)
	ring := [][2]float64{{0, 0}, {0, 1}, {1, 1}, {1, 0}, {0, 0}} // clockwise: an outer ring
	for i := range n {
		content := 44 + 4 + 16*len(ring)
		rec := make([]byte, 8+content)
		binary.BigEndian.PutUint32(rec[0:], uint32(i+1))
		binary.BigEndian.PutUint32(rec[4:], uint32(content/2))
		c := rec[8:]
		binary.LittleEndian.PutUint32(c[0:], 5)
		binary.LittleEndian.PutUint32(c[36:], 1)
		binary.LittleEndian.PutUint32(c[40:], uint32(len(ring)))
		for j, p := range ring {
			binary.LittleEndian.PutUint64(c[48+16*j:], math.Float64bits(float64(i)/1000+p[0]/2000))
			binary.LittleEndian.PutUint64(c[56+16*j:], math.Float64bits(40+p[1]/2000))
		}
		b.Write(rec)
	}
	out := b.Bytes()
	binary.BigEndian.PutUint32(out[24:], uint32(len(out)/2))
	return out
}

// dbfSchema maps the test table's fields: codes with leading zeros kept
// as text (and padded), an id beyond int32, decimals, a date, a boolean,
// a timestamp in a format of its own; NOTE is left to the extras.
const dbfSchema = `
targets:
  parcels:
    columns:
      - {name: apn, type: text}
      - {name: zip, type: text}
      - {name: owner_id, type: int8}
      - {name: code_int, type: int8}
      - {name: tax, type: numeric}
      - {name: sold_on, type: date}
      - {name: vacant, type: boolean}
      - {name: updated_at, type: timestamptz}
      - {name: units, type: int8}
mappings:
  - name: dbf
    target: parcels
    fields:
      apn: {from: APN}
      zip: {from: ZIP, pad: 5}
      owner_id: {from: OWNER}
      code_int: {from: APN}
      tax: {from: TAX}
      sold_on: {from: SOLD}
      vacant: {from: VAC}
      updated_at: {from: UPD, format: "2006/01/02 15:04:05-07"}
      units: {from: UNITS}
`

// noMembers is a reader whose features do not say where their members
// are: the mapping and the keys scan the properties, as before.
type noMembers struct{ geomio.Reader }

func (r noMembers) Feature() geomio.Feature {
	f := r.Reader.Feature()
	f.Members = nil
	return f
}

func (r noMembers) Layers() []geomio.Layer { return []geomio.Layer{r.Layer()} }

// noMembersLR is noMembers of a LayerReader.
type noMembersLR struct{ ingest.LayerReader }

func (r noMembersLR) Feature() geomio.Feature {
	f := r.LayerReader.Feature()
	f.Members = nil
	return f
}

// withMembers is the reader as it is.
type withMembers struct{ geomio.Reader }

func (r withMembers) Layers() []geomio.Layer { return []geomio.Layer{r.Layer()} }

// typedRun is what a job's typed write takes from a shapefile: the COPY
// tuples, the quarantined features and the keys the drift guard saw.
type typedRun struct {
	tuples     []byte
	quarantine []string
	keys       map[string]uint8
	cast       int64
	members    bool
}

func runTyped(t *testing.T, path string, p ingest.Params, members bool) typedRun {
	r, err := geomio.Open(path, geomio.Options{})
	require.NoError(t, err)
	defer r.Close()
	var lr ingest.LayerReader = noMembers{r}
	if members {
		lr = withMembers{r}
	}
	keys := ingest.NewKeysReader(lr)
	var run typedRun
	seen := &seenMembers{LayerReader: keys, seen: &run.members}
	var in ingest.LayerReader = seen
	if !members {
		in = noMembersLR{seen} // nor those the keys' scan found
	}
	rows := prepare.New(context.Background(), in, p, func(context.Context, int) (bool, error) { return true, nil })
	rows.Quarantine = func(s *prepare.Skipped) error {
		run.quarantine = append(run.quarantine, fmt.Sprintf("%d %s %s %s", s.Index, s.Rule, s.Reason, s.Props))
		return nil
	}
	typed := newTypedCols(p.TheMapping().Columns())
	require.NoError(t, rows.Run(prepare.Direct, featureTuple(7, nil, typed, true), func(out []byte) error {
		run.tuples = append(run.tuples, out...)
		return nil
	}))
	run.keys, run.cast = keys.Keys(), rows.SkippedCast
	return run
}

// seenMembers notes whether any feature said where its members are.
type seenMembers struct {
	ingest.LayerReader
	seen *bool
}

func (s *seenMembers) Next() bool {
	if !s.LayerReader.Next() {
		return false
	}
	if s.LayerReader.Feature().Members != nil {
		*s.seen = true
	}
	return true
}

// TestTypedShapefileAsBefore: a varied DBF (leading zeros, int8 beyond
// int32, decimals, dates, booleans, nulls, escapes, values that do not
// cast) under a mapping writes the same tuples, quarantines the same
// features for the same reasons and records the same keys whether its
// members are read where the DBF reader wrote them or scanned for.
func TestTypedShapefileAsBefore(t *testing.T) {
	fields := []dbfField{
		{"APN", 'C', 10, 0}, {"ZIP", 'C', 6, 0}, {"OWNER", 'N', 20, 0}, {"TAX", 'N', 14, 4}, {"SOLD", 'D', 8, 0},
		{"VAC", 'L', 1, 0}, {"UPD", 'C', 24, 0}, {"UNITS", 'C', 6, 0}, {"NOTE", 'C', 20, 0}, {"AREA", 'F', 12, 3},
	}
	apns := []string{"00042", "7", "", "  123  ", "x1", "9223372036854775808", "-5"}
	zips := []string{"42", "12345", "", "x1", "001", "123456"}
	owners := []string{"4000000000", "-12", "", "**********", "007", "2147483648", "-9223372036854775808"}
	taxes := []string{"12.3400", "-0.5000", "", "0.0000", "123456789.1234", "-0.0000", "1.5"}
	solds := []string{"20240229", "", "00000000", "19991231", "00010101"}
	vacs := []string{"T", "F", "?", " ", "y", "N"}
	upds := []string{"2024/01/02 03:04:05+00", "", "garbage", "2024/13/02 03:04:05+00", "1999/12/31 23:59:59-08"}
	units := []string{"3", " 4 ", "", "1.5", "x", "+2", "007"}
	notes := []string{`say "hi"`, `a\b`, "", "tab\there", "été"}
	areas := []string{"1.500", "", "-0.000", "1e3", "12345678.123"}
	var recs [][]string
	n := 600
	for i := range n {
		recs = append(recs, []string{apns[i%len(apns)], zips[i/2%len(zips)], owners[i/3%len(owners)], taxes[i/5%len(taxes)],
			solds[i/7%len(solds)], vacs[i/11%len(vacs)], upds[i/13%len(upds)], units[i/17%len(units)], notes[i/19%len(notes)], areas[i/23%len(areas)]})
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.shp"), testSHP(n), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.dbf"), testDBF(fields, recs), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.cpg"), []byte("UTF-8"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.prj"), []byte(`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`), 0o644))
	s, err := ingest.ParseSchema([]byte(dbfSchema))
	require.NoError(t, err)
	p := ingest.DefaultParams("parcels")
	p.Schema, p.Mapping = s, "dbf"
	path := filepath.Join(dir, "p.shp")

	old, now := runTyped(t, path, p, false), runTyped(t, path, p, true)
	require.True(t, now.members, "the DBF reader gives no members: the test reads nothing new")
	require.Greater(t, old.cast, int64(100), "too few cast failures to test the quarantine")
	require.Less(t, old.cast, int64(n-100), "too few rows written to test them")
	require.Equal(t, old.cast, now.cast)
	require.Equal(t, old.quarantine, now.quarantine)
	require.Equal(t, old.keys, now.keys)
	require.True(t, bytes.Equal(old.tuples, now.tuples), "the tuples differ")
}

// TestTypedGeoJSONAsBefore: GeoJSON's properties, whose members the drift
// guard's scan of their keys finds and gives the mapping, map to the same
// tuples, quarantine and keys as when the mapping scans them again;
// properties with white space between a key and its value are scanned
// again (the members are not given).
func TestTypedGeoJSONAsBefore(t *testing.T) {
	vals := map[string][]string{
		"APN":      {`"00042"`, `7`, `""`, `"  123  "`, `"x1"`, `null`},
		"ZIP":      {`"42"`, `"12345"`, `""`, `"x1"`, `1`},
		"OWNER":    {`4000000000`, `-12`, `null`, `"007"`, `2147483648`, `1.5`},
		"TAX":      {`12.34`, `-0.5`, `null`, `1e3`, `"1.25"`, `0.10`},
		"SOLD":     {`"2024-02-29"`, `null`, `"2023-02-29"`, `"1999-12-31"`},
		"VAC":      {`true`, `false`, `"?"`, `"y"`, `0`},
		"UPD":      {`"2024/01/02 03:04:05+00"`, `""`, `"garbage"`, `"1999/12/31 23:59:59-08"`},
		"UNITS":    {`3`, `" 4 "`, `null`, `1.5`, `"x"`},
		"NOTE":     {`"say \"hi\""`, `"a\\b"`, `[1,{"b":2}]`, `"\u00e9t\u00e9"`, `{}`},
		`k\u00e9y`: {`1`, `"v"`}, // an escaped key, to the extras
	}
	names := []string{"APN", "ZIP", "OWNER", "TAX", "SOLD", "VAC", "UPD", "UNITS", "NOTE", `k\u00e9y`}
	var b bytes.Buffer
	n := 600
	for i := range n {
		b.WriteString(`{"type":"Feature","properties":{`)
		for j, k := range names {
			if j > 0 {
				b.WriteString([]string{",", ",", ", "}[(i+j)%3])
			}
			vs := vals[k]
			sep := ":"
			if i%7 == 0 && j == 3 {
				sep = ": " // white space: scanned again
			}
			fmt.Fprintf(&b, `"%s"%s%s`, k, sep, vs[(i/(j+1))%len(vs)])
		}
		x := float64(i) / 1000
		fmt.Fprintf(&b, `},"geometry":{"type":"Polygon","coordinates":[[[%g,40],[%g,40.0005],[%g,40.0005],[%g,40],[%g,40]]]}}`+"\n",
			x, x, x+0.0005, x+0.0005, x)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.geojsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	s, err := ingest.ParseSchema([]byte(dbfSchema))
	require.NoError(t, err)
	p := ingest.DefaultParams("parcels")
	p.Schema, p.Mapping = s, "dbf"

	old, now := runTyped(t, path, p, false), runTyped(t, path, p, true)
	require.True(t, now.members, "the keys' scan gives no members: the test reads nothing new")
	require.Greater(t, old.cast, int64(100), "too few cast failures to test the quarantine")
	require.Less(t, old.cast, int64(n-100), "too few rows written to test them")
	require.Equal(t, old.cast, now.cast)
	require.Equal(t, old.quarantine, now.quarantine)
	require.Equal(t, old.keys, now.keys)
	require.True(t, bytes.Equal(old.tuples, now.tuples), "the tuples differ")
}
