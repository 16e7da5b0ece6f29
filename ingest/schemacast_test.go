package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// castColumns are a column of each type and transform the casts know.
func castColumns() []mappedColumn {
	col := func(typ string, fm FieldMap) mappedColumn {
		fm.From = "f"
		return mappedColumn{Column: Column{Name: "c", Type: typ}, FieldMap: fm}
	}
	return []mappedColumn{
		col(TypeText, FieldMap{}),
		col(TypeText, FieldMap{Trim: true}),
		col(TypeText, FieldMap{Pad: 6}),
		col(TypeText, FieldMap{Trim: true, Pad: 3}),
		col(TypeInt8, FieldMap{}),
		col(TypeNumeric, FieldMap{}),
		col(TypeBoolean, FieldMap{}),
		col(TypeDate, FieldMap{}),
		col(TypeDate, FieldMap{Format: "2006-01-02"}),
		col(TypeDate, FieldMap{Format: "01/02/2006"}),
		col(TypeTimestamptz, FieldMap{}),
		col(TypeTimestamptz, FieldMap{Format: "2006-01-02 15:04:05 MST"}),
	}
}

// sameCast checks that cast and refCast (the string-based casts) agree on
// raw, output and error.
func sameCast(t testing.TB, c mappedColumn, raw []byte, present bool) {
	want, werr := c.refCast([]byte("x,"), raw, present)
	got, gerr := c.cast([]byte("x,"), raw, present)
	name := fmt.Sprintf("%s %+v %q", c.Type, c.FieldMap, raw)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s: error %v, reference %v", name, gerr, werr)
	}
	if string(got) != string(want) {
		t.Fatalf("%s: %q, reference %q", name, got, want)
	}
}

// castValues are edge cases of every cast.
var castValues = []string{
	``, `null`, `""`, `"  "`, `" \t"`, `"\u00a0"`, `"\u0085x"`, `"a\u0000b"`, `"\n"`, `"x\"y"`, `"\u00e9"`, `"é"`,
	`{}`, `[1]`, `"`, `"\"`, `"\x"`, `"ab`, "\"\xff\"",
	`0`, `-0`, `+1`, `"+1"`, `"++1"`, `"-"`, `"+"`, `"1_000"`, `12`, `"0012"`, `" 12 "`, `"12x"`, `1.5`, `1e3`, `1E3`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
	`18446744073709551615`, `18446744073709551616`, `18446744073709551619`, `99999999999999999999`, `"00000000000000000000009"`,
	`1.`, `.5`, `-.5`, `01`, `-01.5`, `0.000`, `1e`, `1e+`, `1e-5`, `1e+5`, `1e0000000000000000000005`, `1e99999999999999999999`,
	`1e1000`, `1e1001`, `1e-1000`, `1e-1001`, `"1e-1001"`, `"123.45"`, `123.450`, `-0.0e-0`,
	`true`, `false`, `"TRUE"`, `"True"`, `"yEs"`, `"Y"`, `"n"`, `"NO"`, `"f"`, `"T"`, `"1"`, `"0"`, `1`, `2`, `"truee"`, `"ye"`,
	`"\u0130"`, `"\u212a"`, `"yeſ"`, `"ﬀ"`, `" true "`,
	`"2021-03-14"`, `"2021-02-29"`, `"2020-02-29"`, `"1900-02-29"`, `"2000-02-29"`, `"0000-02-29"`, `"0000-01-01"`, `"9999-12-31"`,
	`"2021-13-01"`, `"2021-00-01"`, `"2021-01-00"`, `"2021-04-31"`, `"2021-4-01"`, `"2021-04-1"`, `"21-04-01"`, `"2021-04-01x"`,
	`"2021/04/01"`, `"+021-04-01"`, `"2021-04-01 "`, `" 2021-04-01"`, `"2021-0a-01"`, `"03/14/2021"`, `"02/30/2021"`, `20210314`,
	`"2024-03-01T12:00:00Z"`, `"2024-03-01T12:00:00.123456789+02:00"`, `"2024-03-01t12:00:00z"`, `"2024-03-01T24:00:00Z"`,
	`"2024-03-01T12:00:00"`, `"2024-03-01 12:00:00 UTC"`, `"2024-03-01 12:00:00 PST"`, `"2024-03-01T12:00:60Z"`,
	`"2024-03-01T12:00:00,5Z"`, `"2024-03-01T12:00:00.Z"`,
}

// TestCastMatchesReference: the casts from the bytes give what the
// string-based ones gave, output and error, on the edge cases of each.
func TestCastMatchesReference(t *testing.T) {
	for _, c := range castColumns() {
		sameCast(t, c, nil, false)
		for _, v := range castValues {
			sameCast(t, c, []byte(v), true)
		}
	}
}

// TestCastBooleanASCII: parseBool lowers ASCII only, which is exact
// because strings.ToLower maps no other character into ASCII but i and
// k (neither in a boolean word).
func TestCastBooleanASCII(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < 0x80 {
			require.Contains(t, "ik", string(l), "U+%04X", r)
		}
	}
	for _, w := range []string{"true", "t", "yes", "y", "1", "false", "f", "no", "n", "0"} {
		require.False(t, strings.ContainsAny(w, "ik"), w)
	}
}

// TestCastAllocations: text, int8, numeric, boolean and default-format
// date values cast with no allocation.
func TestCastAllocations(t *testing.T) {
	cols := castColumns()
	vals := map[string]json.RawMessage{TypeText: json.RawMessage(`"0012345"`), TypeInt8: json.RawMessage(`9007199254740993`),
		TypeNumeric: json.RawMessage(`"123.45"`), TypeBoolean: json.RawMessage(`"Y"`), TypeDate: json.RawMessage(`"2021-03-14"`)}
	out := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		for _, c := range cols {
			v, ok := vals[c.Type]
			if !ok || (c.Type == TypeDate && c.Format != "") {
				continue
			}
			var err error
			if out, err = c.cast(out[:0], v, true); err != nil {
				t.Fatal(err)
			}
		}
	})
	require.Zero(t, n)
}

// FuzzCast holds the casts to the string-based ones on any value.
func FuzzCast(f *testing.F) {
	for i, v := range castValues {
		f.Add(v, uint8(i))
	}
	cols := castColumns()
	f.Fuzz(func(t *testing.T, v string, col uint8) {
		sameCast(t, cols[int(col)%len(cols)], []byte(v), true)
	})
}
