package postgis

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio/jsonscan"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/jackc/pgx/v5"
)

// The stored typed columns (migration 0036, docs/schema.md). A job under
// a mapping of the typed schema writes each mapped column as a real
// column of the feature table, in the same binary COPY as the rest of
// the row: the prepare workers encode each value from the feature's
// record (ingest.Mapping.Apply, which cast and normalised it on the
// reading goroutine; a value that does not cast never reaches here, it is
// in the quarantine). The columns exist once `geoingest schema apply`
// added them (ALTER TABLE ... ADD COLUMN, no default: no row rewritten);
// the register geoingest_typed_columns lists them, and their names are
// the only identifiers from the schema file in any SQL: checked by the
// schema (ingest.ParseSchema), by the register's CHECKs, and quoted
// (pgx.Identifier here, %I on the server).

// typedCols are the typed columns a job writes: its mapping's columns, in
// its record's order.
type typedCols struct {
	cols []ingest.Column
	list string // ", "col1", "col2"": the COPY's column list's tail

	// The record's members in jsonb's key order (canonicalRecord): the
	// index of a column in cols, or len(cols) for the extras; and each
	// one's `"name": ` as the canonical text writes it.
	corder []int
	ckeys  [][]byte
}

// newTypedCols returns the typedCols of cols, with the record's
// canonical key order worked out once.
func newTypedCols(cols []ingest.Column) *typedCols {
	t := &typedCols{cols: cols}
	names := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		names = append(names, c.Name)
	}
	names = append(names, ingest.ExtrasKey)
	t.corder = make([]int, len(names))
	for i := range t.corder {
		t.corder[i] = i
	}
	// jsonb's order of an object's keys: shorter first, then by bytes.
	// The names are distinct (the schema's check; extras is reserved).
	sort.SliceStable(t.corder, func(a, b int) bool {
		x, y := names[t.corder[a]], names[t.corder[b]]
		if len(x) != len(y) {
			return len(x) < len(y)
		}
		return x < y
	})
	t.ckeys = make([][]byte, len(names))
	for i, n := range names {
		// Names are [a-z0-9_]: no escape.
		t.ckeys[i] = []byte(`"` + n + `": `)
	}
	return t
}

// typedColumns returns the typed columns of job (nil when it has no
// mapping), checked against the register: a mapped column that is not
// stored yet, or stored with another type, is an error (Transient: the
// schema file was deployed before `geoingest schema apply` ran; the job
// is retried, as the message says).
func (s *Store) typedColumns(ctx context.Context, g *gate, job ingest.Job) (*typedCols, error) {
	m := job.Params.TheMapping()
	if m == nil {
		return nil, nil
	}
	cols := m.Columns()
	if len(cols) == 0 {
		return nil, nil
	}
	stored, err := g.q.TypedColumns(ctx, job.Params.Target)
	if err != nil {
		return nil, normaliseErr(fmt.Errorf("typed columns: %w", err))
	}
	types := make(map[string]string, len(stored))
	for _, c := range stored {
		types[c.Name] = c.Type
	}
	t := newTypedCols(cols)
	var b strings.Builder
	for _, c := range cols {
		switch st, ok := types[c.Name]; {
		case !ok:
			return nil, ingest.Transientf("mapping %s: column %s (%s) is not stored in %s yet: run geoingest schema apply --schema %s",
				m.Name, c.Name, c.Type, job.Params.Target, job.Params.Schema.File)
		case st != c.Type:
			return nil, ingest.Transientf("mapping %s: column %s is %s in the schema but stored as %s in %s: a typed column's type cannot change (docs/schema.md)",
				m.Name, c.Name, c.Type, st, job.Params.Target)
		}
		b.WriteString(", ")
		b.WriteString(pgx.Identifier{c.Name}.Sanitize())
	}
	t.list = b.String()
	return t, nil
}

// columns is the COPY's column list tail (empty for none).
func (t *typedCols) columns() string {
	if t == nil {
		return ""
	}
	return t.list
}

// n is how many fields the typed columns add to a tuple.
func (t *typedCols) n() int {
	if t == nil {
		return 0
	}
	return len(t.cols)
}

// appendTyped appends the typed columns' binary COPY fields of record, a
// mapped record ({"col": value, ..., "extras": {...}}, the columns in
// t.cols' order, each value JSON as Apply wrote it). A record that is not
// that (never, from Apply) gets a field that the server refuses
// (incorrect binary data format), failing the job, rather than a NULL.
func (t *typedCols) appendTyped(out, record []byte) []byte {
	if t == nil {
		return out
	}
	i := 0
	if len(record) == 0 || record[0] != '{' {
		return appendBadFields(out, len(t.cols))
	}
	i++
	for k, c := range t.cols {
		// "name":value, names being [a-z0-9_] need no escape.
		if k > 0 {
			if i >= len(record) || record[i] != ',' {
				return appendBadFields(out, len(t.cols)-k)
			}
			i++
		}
		if i+len(c.Name)+3 > len(record) || record[i] != '"' || string(record[i+1:i+1+len(c.Name)]) != c.Name ||
			record[i+1+len(c.Name)] != '"' || record[i+2+len(c.Name)] != ':' {
			return appendBadFields(out, len(t.cols)-k)
		}
		i += len(c.Name) + 3
		end := scalarEnd(record, i)
		if end < 0 {
			return appendBadFields(out, len(t.cols)-k)
		}
		out = appendTypedValue(out, c.Type, record[i:end])
		i = end
	}
	return out
}

// spans returns where the values of f's record are (prepare.Feature's
// Spans): each column's in t.cols' order, then the extras object's, as
// [start, end) pairs of offsets in f.Props. They are the ones Apply gave,
// or else found here in buf (a record as Apply writes it:
// {"col":value,...,"extras":{...}}, no white space); nil when t has no
// canonical order or the record is not that (never, from Apply), and the
// callers then read it as they did before (appendTyped,
// prepare.CanonicalProps).
func (t *typedCols) spans(f *prepare.Feature, buf []int32) []int32 {
	if t == nil || t.corder == nil {
		return nil
	}
	n := len(t.cols) + 1
	if len(f.Spans) == 2*n {
		return f.Spans
	}
	record := f.Props
	if len(record) == 0 || record[0] != '{' {
		return nil
	}
	at := buf[:0]
	i := 1
	for k := 0; k < n; k++ {
		name, last := ingest.ExtrasKey, k == n-1
		if !last {
			name = t.cols[k].Name
		}
		if k > 0 {
			if i >= len(record) || record[i] != ',' {
				return nil
			}
			i++
		}
		if i+len(name)+3 > len(record) || record[i] != '"' || string(record[i+1:i+1+len(name)]) != name ||
			record[i+1+len(name)] != '"' || record[i+2+len(name)] != ':' {
			return nil
		}
		i += len(name) + 3
		var end int
		if last {
			if i >= len(record) || record[i] != '{' {
				return nil
			}
			end = jsonscan.SkipValue(record, i)
		} else {
			end = scalarEnd(record, i)
		}
		if end < 0 {
			return nil
		}
		at = append(at, int32(i), int32(end))
		i = end
	}
	if i != len(record)-1 || record[i] != '}' {
		return nil
	}
	return at
}

// canonicalRecord appends the canonical text of record
// (prepare.CanonicalProps: what jsonb_out prints) from its spans sp: its
// members written in t's precomputed key order, each value
// canonicalised where it stands (prepare.CanonicalObject). The bytes are
// CanonicalProps' for the record (TestTypedTupleAsBefore), without its
// scan of every key and its sort; an error is where CanonicalProps fails
// too, and the caller then does as it does for that.
func (t *typedCols) canonicalRecord(out, record []byte, sp []int32) ([]byte, error) {
	return prepare.CanonicalObject(out, record, t.ckeys, t.corder, sp)
}

// appendTypedSpans is appendTyped of a record whose spans are sp.
func (t *typedCols) appendTypedSpans(out, record []byte, sp []int32) []byte {
	for k, c := range t.cols {
		out = appendTypedValue(out, c.Type, record[sp[2*k]:sp[2*k+1]])
	}
	return out
}

// scalarEnd is the end of the JSON scalar (string, number, true, false,
// null) at v[i:], -1 when there is none.
func scalarEnd(v []byte, i int) int {
	if i >= len(v) {
		return -1
	}
	if v[i] == '"' {
		end, _ := jsonscan.StringEnd(v, i)
		return end
	}
	j := i
	for j < len(v) && v[j] != ',' && v[j] != '}' {
		j++
	}
	if j == i || j == len(v) {
		return -1
	}
	return j
}

// appendBadFields appends n fields that no column type reads: 9 bytes of
// 0xff, one more than any fixed-size type takes, and not UTF-8 for a
// text.
func appendBadFields(out []byte, n int) []byte {
	for ; n > 0; n-- {
		out = binary.BigEndian.AppendUint32(out, 9)
		out = append(out, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	}
	return out
}

// pgEpoch is PostgreSQL's epoch of dates and timestamps (2000-01-01 UTC)
// in Unix seconds.
const pgEpoch = 946684800

// appendTypedValue appends one typed column's binary field of the JSON
// scalar v (as Apply wrote it).
func appendTypedValue(out []byte, typ string, v []byte) []byte {
	be := binary.BigEndian
	if string(v) == "null" {
		return be.AppendUint32(out, math.MaxUint32) // -1: NULL
	}
	switch typ {
	case ingest.TypeText:
		if len(v) < 2 || v[0] != '"' {
			return appendBadFields(out, 1)
		}
		s := v[1 : len(v)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			var u string
			if err := json.Unmarshal(v, &u); err != nil {
				return appendBadFields(out, 1)
			}
			s = []byte(u)
		}
		out = be.AppendUint32(out, uint32(len(s)))
		return append(out, s...)
	case ingest.TypeInt8:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return appendBadFields(out, 1)
		}
		out = be.AppendUint32(out, 8)
		return be.AppendUint64(out, uint64(n))
	case ingest.TypeBoolean:
		out = be.AppendUint32(out, 1)
		switch string(v) {
		case "true":
			return append(out, 1)
		case "false":
			return append(out, 0)
		}
		return appendBadFields(out[:len(out)-4], 1)
	case ingest.TypeNumeric:
		return appendNumeric(out, v)
	case ingest.TypeDate:
		// What time.Parse(`"2006-01-02"`, v) takes, read in place.
		if len(v) != 12 || v[0] != '"' || v[11] != '"' {
			return appendBadFields(out, 1)
		}
		y, m, d, ok := ingest.ParseDate(v[1:11])
		if !ok {
			return appendBadFields(out, 1)
		}
		days := floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()-pgEpoch, 86400)
		out = be.AppendUint32(out, 4)
		return be.AppendUint32(out, uint32(int32(days)))
	case ingest.TypeTimestamptz:
		if len(v) < 2 || v[0] != '"' {
			return appendBadFields(out, 1)
		}
		t, err := time.Parse(time.RFC3339Nano, string(v[1:len(v)-1]))
		if err != nil {
			return appendBadFields(out, 1)
		}
		// Microseconds, the nanoseconds rounded half to even, as
		// PostgreSQL rounds a timestamp's input.
		us := (t.Unix()-pgEpoch)*1e6 + int64(t.Nanosecond()/1000)
		if r := t.Nanosecond() % 1000; r > 500 || (r == 500 && us%2 != 0) {
			us++
		}
		out = be.AppendUint32(out, 8)
		return be.AppendUint64(out, uint64(us))
	}
	return appendBadFields(out, 1)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// appendNumeric appends the binary numeric field of the JSON number s
// (ingest's isDecimal, within ingest.NumericLimit): what numeric_in makes
// of the same text. Base-10000 digits aligned on the point, weight the
// power of 10000 of the first, leading and trailing zero digits dropped;
// the display scale is the digits after the point less the exponent, at
// least 0 (1.50 keeps 2, 1.5e1 is 15). It allocates nothing: the digits
// are read in place, with the zeros the alignment adds counted, not
// written (TestAppendNumericMatchesReference holds it to the version that
// built them as strings).
func appendNumeric(out []byte, s []byte) []byte {
	be := binary.BigEndian
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	exp := 0
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		// strconv.Atoi of the exponent without its one '+'.
		e := s[i+1:]
		if len(e) > 0 && e[0] == '+' {
			e = e[1:]
		}
		eneg := false
		if len(e) > 0 && (e[0] == '+' || e[0] == '-') {
			eneg = e[0] == '-'
			e = e[1:]
		}
		if len(e) == 0 {
			return appendBadFields(out, 1)
		}
		for _, d := range e {
			if d < '0' || d > '9' {
				return appendBadFields(out, 1)
			}
			if exp = exp*10 + int(d-'0'); exp > 10*ingest.NumericLimit {
				return appendBadFields(out, 1)
			}
		}
		if eneg {
			exp = -exp
		}
		s = s[:i]
		break
	}
	intPart, frac := s, s[len(s):]
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	if len(intPart) == 0 || !allDigitsOrEmpty(intPart) || !allDigitsOrEmpty(frac) {
		return appendBadFields(out, 1)
	}
	dscale := max(len(frac)-exp, 0)
	// The digits: front zeros, intPart, frac, back zeros; and the
	// point's place among them.
	front, n := 0, len(intPart)+len(frac)
	point := len(intPart) + exp
	if point < 0 {
		front, point = -point, 0
	}
	back := max(point-(front+n), 0)
	total := front + n + back
	if point > ingest.NumericLimit+1 || total-point > ingest.NumericLimit+10 {
		return appendBadFields(out, 1)
	}
	// Pad to whole groups of 4 on both sides of the point.
	lead := (4 - point%4) % 4
	front, point, total = front+lead, point+lead, total+lead
	if r := (total - point) % 4; r != 0 {
		back, total = back+4-r, total+4-r
	}
	digit := func(k int) uint16 {
		switch k -= front; {
		case k < 0 || k >= n:
			return 0
		case k < len(intPart):
			return uint16(intPart[k] - '0')
		default:
			return uint16(frac[k-len(intPart)] - '0')
		}
	}
	group := func(g int) uint16 {
		k := 4 * g
		return digit(k)*1000 + digit(k+1)*100 + digit(k+2)*10 + digit(k+3)
	}
	weight := point/4 - 1
	first, last := 0, total/4 // the groups kept: [first, last)
	for first < last && group(first) == 0 {
		first++
		weight--
	}
	for last > first && group(last-1) == 0 {
		last--
	}
	ngroups := last - first
	sign := uint16(0)
	if neg && ngroups > 0 {
		sign = 0x4000
	}
	if ngroups == 0 {
		weight = 0
	}
	out = be.AppendUint32(out, uint32(8+2*ngroups))
	out = be.AppendUint16(out, uint16(ngroups))
	out = be.AppendUint16(out, uint16(int16(weight)))
	out = be.AppendUint16(out, sign)
	out = be.AppendUint16(out, uint16(dscale))
	for g := first; g < last; g++ {
		out = be.AppendUint16(out, group(g))
	}
	return out
}

func allDigitsOrEmpty[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
