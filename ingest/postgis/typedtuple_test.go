package postgis

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/stretchr/testify/require"
)

// The typed tuple (copyrows.go, typed.go): a mapped record's values are
// found once, and its canonical text written member by member in the
// record's known key order, where every row's text was canonicalised
// whole (prepare.CanonicalProps: keys scanned and sorted) and the record
// scanned again for its typed columns. The tuple must be the one the old
// path wrote, byte for byte: the stored properties, their hash and the
// typed columns.

// tupleSchema has a column of every type, names of several lengths (so
// that jsonb's order is not the columns' order) and a mapping of them.
const tupleSchema = `
targets:
  parcels:
    columns:
      - {name: zip, type: text}
      - {name: a, type: text}
      - {name: owner_id, type: int8}
      - {name: tax, type: numeric}
      - {name: vacant, type: boolean}
      - {name: sold_on, type: date}
      - {name: updated_at, type: timestamptz}
      - {name: code, type: text}
      - {name: extra_s, type: text}
mappings:
  - name: m
    target: parcels
    fields:
      zip: {from: ZIP}
      a: {from: A, trim: true}
      owner_id: {from: OWNER}
      tax: {from: TAX}
      vacant: {from: VACANT}
      sold_on: {from: SOLD}
      updated_at: {from: UPD}
      code: {from: CODE, pad: 5}
      extra_s: {from: S}
`

// oldTuple is appendFeature as it was: the properties canonicalised
// whole, the typed columns read by appendTyped.
func oldTuple(out []byte, ref int64, f *prepare.Feature, p *prepare.Prepared, typed *typedCols) []byte {
	be := func(b []byte, n uint64, size int) []byte {
		for i := size - 1; i >= 0; i-- {
			b = append(b, byte(n>>(8*i)))
		}
		return b
	}
	out = be(out, uint64(featureFields+typed.n()), 2)
	out = be(out, 8, 4)
	out = be(out, uint64(ref), 8)
	out = be(out, 8, 4)
	out = be(out, uint64(f.Index), 8)
	out = be(out, uint64(len(f.Layer)), 4)
	out = append(out, f.Layer...)
	at := len(out)
	out = be(out, 0, 4)
	out = append(out, 1)
	var ph [16]byte
	canonical := false
	if c, err := prepare.CanonicalProps(out, f.Props); err == nil {
		out = c
		ph, canonical = prepare.CanonicalHash(out[at+5:]), true
	} else {
		out = append(out[:at+5], f.Props...)
	}
	n := uint64(len(out) - at - 4)
	out[at], out[at+1], out[at+2], out[at+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	out = be(out, uint64(len(p.EWKB)), 4)
	out = append(out, p.EWKB...)
	out = be(out, 0xffffffff, 4) // area: unmeasured
	out, _ = matchColumns(out, f, p, nil, nil, true, ph, canonical)
	out = be(out, 0xffffffff, 4) // raw hash: must
	return typed.appendTyped(out, f.Props)
}

// tupleValues are values of every kind, for the fields of tupleSchema:
// what each type casts and what it refuses (the record then never
// exists), strings with escapes, control characters and non-ASCII text,
// numbers jsonb prints otherwise than written.
var tupleValues = []string{
	`null`, `""`, `"  "`, `"x"`, `" padded "`, `"007"`, `"42"`, `"00042"`, `"a\"b"`, `"a\\b"`, `"tab\there"`, `"nl\nx"`,
	`"\u0001"`, `"\u00e9t\u00e9"`, `"été"`, `"\ud83d\ude00"`, `"\/"`, `"日本"`,
	`0`, `-0`, `7`, `-12`, `9223372036854775807`, `-9223372036854775808`, `9223372036854775808`, `2147483648`,
	`1.5`, `1.50`, `-0.00`, `1e3`, `1E-2`, `12.34e+1`, `0.000`, `123456789012345678901234567890.123`,
	`true`, `false`, `"true"`, `"Y"`, `"n"`, `"1"`, `"2024-02-29"`, `"2023-02-29"`, `"1999-12-31"`,
	`"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.123456789+02:00"`, `"2024-01-02T03:04:05.0000005Z"`,
	`[1,2]`, `{"k":1}`, `"1,5"`,
}

// extrasValues are unmapped fields' values, nested and awkward.
var extrasValues = []string{
	`1`, `1.0`, `-0`, `1e2`, `"s"`, `"a\u0000b"`, `"\ud800"`, `[]`, `{}`, `[1,"a",null,true,{"b":[{}]}]`,
	`{"zz":1,"a":2,"a":3}`, `{"b": {"c" : [ 1 , 2 ]}}`, `"日本語"`, `null`, `false`, `0.10`,
	strings.Repeat("[", 63) + strings.Repeat("]", 63), strings.Repeat("[", 64) + strings.Repeat("]", 64),
}

// fieldValues are values that cast, by field of tupleSchema's mapping.
var fieldValues = map[string][]string{
	"OWNER":  {`0`, `-0`, `7`, `"007"`, `-12`, `9223372036854775807`, `-9223372036854775808`, `2147483648`, `" 12 "`, `"+5"`, `null`, `""`},
	"TAX":    {`0`, `-0`, `1.5`, `1.50`, `-0.00`, `1e3`, `1E-2`, `12.34e+1`, `0.000`, `123456789012345678901234567890.123`, `"1.25"`, `"-0"`, `null`},
	"VACANT": {`true`, `false`, `"true"`, `"Y"`, `"n"`, `"1"`, `0`, `1`, `null`, `"  "`},
	"SOLD":   {`"2024-02-29"`, `"1999-12-31"`, `"0001-01-01"`, `null`, `""`},
	"UPD":    {`"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.123456789+02:00"`, `"2024-01-02T03:04:05.0000005Z"`, `null`},
}

// fieldValue is a value for the field k: mostly one that casts.
func fieldValue(r *rand.Rand, k string) string {
	if vs, ok := fieldValues[k]; ok && r.Intn(10) != 0 {
		return vs[r.Intn(len(vs))]
	}
	return tupleValues[r.Intn(len(tupleValues))]
}

// randomProps is a feature's attributes: some of tupleSchema's fields
// (in any order, some repeated, some missing) and some unmapped ones.
func randomProps(r *rand.Rand) []byte {
	fields := []string{"ZIP", "A", "OWNER", "TAX", "VACANT", "SOLD", "UPD", "CODE", "S"}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	member := func(k, v string) {
		if n > 0 {
			b.WriteString([]string{",", ", ", " ,\n"}[r.Intn(3)])
		}
		n++
		fmt.Fprintf(&b, "%q%s%s", k, []string{":", " : "}[r.Intn(2)], v)
	}
	for _, k := range r.Perm(len(fields)) {
		if r.Intn(8) == 0 {
			continue
		}
		member(fields[k], fieldValue(r, fields[k]))
		if r.Intn(20) == 0 {
			member(fields[k], tupleValues[r.Intn(len(tupleValues))])
		}
	}
	for range r.Intn(4) {
		k := []string{"note", "n", "a_much_longer_field_name", "z\\u00e9", "extras", "A "}[r.Intn(6)]
		member(k, extrasValues[r.Intn(len(extrasValues))])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// sameTuple checks the tuple of props, mapped, against oldTuple.
func sameTuple(t testing.TB, a *ingest.Applier, typed *typedCols, props []byte) (mapped bool) {
	rec, err := a.Apply(nil, props)
	if err != nil {
		return false // a cast failure: quarantined, never written
	}
	p := &prepare.Prepared{EWKB: []byte{1, 2, 3}}
	want := oldTuple(nil, 42, &prepare.Feature{Index: 3, Layer: "layer", Props: rec}, p, typed)
	// With the spans Apply gave (prepare.Feature.Spans), and found again.
	for _, spans := range [][]int32{a.Spans(), nil} {
		f := &prepare.Feature{Index: 3, Layer: "layer", Props: rec, Spans: spans}
		got, _, _, _ := appendFeature(nil, 42, f, p, nil, nil, typed, true)
		if !bytes.Equal(got, want) {
			t.Fatalf("props %s, record %s, spans %v:\n got %q\nwant %q", props, rec, spans, got, want)
		}
	}
	return true
}

func tupleMapping(t testing.TB) (*ingest.Mapping, *typedCols) {
	s, err := ingest.ParseSchema([]byte(tupleSchema))
	require.NoError(t, err)
	m := s.Mapping("m")
	return m, newTypedCols(m.Columns())
}

// TestTypedTupleAsBefore: for varied attributes (escapes, control
// characters, numbers jsonb prints otherwise, nested and deep extras,
// repeated keys, values that do not cast), the tuple is the old path's.
func TestTypedTupleAsBefore(t *testing.T) {
	m, typed := tupleMapping(t)
	require.NotEqual(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, typed.corder, "the test needs a key order other than the columns'")
	a := m.Applier()
	r := rand.New(rand.NewSource(1))
	written := 0
	for range 20000 {
		if sameTuple(t, a, typed, randomProps(r)) {
			written++
		}
	}
	require.Greater(t, written, 1000, "too few records cast to test anything")
	t.Logf("%d records written", written)
	// Records that are not Apply's (never written; the old path's answer
	// stands): a bad value, no extras, trailing bytes.
	for _, rec := range []string{`{}`, `{"zip":"1"}`, `{"zip":1,"a":"x"}`, `not json`,
		`{"zip":"1","a":null,"owner_id":1,"tax":1,"vacant":true,"sold_on":null,"updated_at":null,"code":null,"extra_s":null,"extras":{}}x`,
		`{"zip":"1","a":null,"owner_id":1,"tax":01,"vacant":true,"sold_on":null,"updated_at":null,"code":null,"extra_s":null,"extras":{}}`,
		`{"zip":"1","a":null,"owner_id":1,"tax":1,"vacant":true,"sold_on":null,"updated_at":null,"code":null,"extra_s":null,"extras":{"a":01}}`,
	} {
		f := &prepare.Feature{Props: []byte(rec)}
		p := &prepare.Prepared{}
		got, _, _, _ := appendFeature(nil, 1, f, p, nil, nil, typed, true)
		require.Equal(t, oldTuple(nil, 1, f, p, typed), got, rec)
	}
}

// FuzzTypedTuple holds the typed tuple to the old path on any
// attributes.
func FuzzTypedTuple(f *testing.F) {
	r := rand.New(rand.NewSource(2))
	for range 50 {
		f.Add(randomProps(r))
	}
	m, typed := tupleMapping(f)
	f.Fuzz(func(t *testing.T, props []byte) { sameTuple(t, m.Applier(), typed, props) })
}
