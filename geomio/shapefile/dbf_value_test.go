package shapefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// refAppendValue is appendValue as it was before numbers were parsed as
// bytes and padding trimmed by the word (c3f1f02's), for UTF-8 tables:
// the reference FuzzDBFValueAsBefore holds the reader to.
func refAppendValue(out []byte, f dbfField, raw []byte) ([]byte, error) {
	switch f.typ {
	case 'C':
		b := bytes.TrimRight(raw, " \x00")
		if !utf8.Valid(b) {
			return nil, errors.New("invalid utf-8")
		}
		return refJSONString(out, b), nil
	case 'N', 'F':
		s := strings.TrimSpace(strings.Trim(string(raw), "\x00"))
		if s == "" || strings.Trim(s, "*") == "" || s == "-" || s == "." {
			return append(out, "null"...), nil
		}
		if f.typ == 'N' && f.decimals == 0 {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				return strconv.AppendInt(out, v, 10), nil
			}
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("invalid number %q", s)
		}
		return strconv.AppendFloat(out, v, 'g', -1, 64), nil
	}
	return nil, errors.New("not a type the reference covers")
}

// refJSONString is core.AppendJSONString as it was, byte by byte.
func refJSONString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// FuzzDBFValueAsBefore: a text or number field's JSON (or its refusal) is
// what the reader made of it before (refAppendValue), for any bytes:
// padding of spaces and NULs in every position and length, escapes,
// signs, leading zeros, long integers, exponents, stars.
func FuzzDBFValueAsBefore(f *testing.F) {
	for _, s := range []string{"", " ", "ab  \x00 \x00     ", "   \x00\x00\x00\x00\x00\x00\x00\x00\x00", "a\"b\\c\n\t\x01 \x7f é   ",
		"  42", "-0", "+5", "+", "0000000000000000000012", "00009007199254740993", "-9223372036854775808", "9223372036854775808",
		"12345678901234567890", "1.5e3\x00", "**", "*1", " - ", "\u00a012\u00a0", "0x10", "1_000", "Inf", "1e400", "\xff",
		"0.0001", "0.00009999", "-0.00010", "999999.5", "999999.9999999999", "1000000.0", "100000", "123456789012345.6",
		"12345.6789012345", "12345.67890123456", "0.1", "-0.000", "00.50", "5.", ".5", "-.5", "12.3400", "1200", "1200.000",
		"0.000000", "9007199254740993.0", "0.30000000000000004"} {
		f.Add([]byte(s), byte('C'), 0)
		f.Add([]byte(s), byte('N'), 0)
		f.Add([]byte(s), byte('N'), 2)
		f.Add([]byte(s), byte('F'), 0)
	}
	d := &dbfReader{}
	f.Fuzz(func(t *testing.T, raw []byte, typ byte, decimals int) {
		switch typ {
		case 'C', 'N', 'F':
		default:
			typ = "CNF"[int(typ)%3]
		}
		field := dbfField{typ: typ, decimals: decimals, length: len(raw)}
		want, wantErr := refAppendValue([]byte("{"), field, raw)
		got, err := d.appendValue([]byte("{"), field, raw)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("%c %q: got %s, %v; want %s, %v", typ, raw, got, err, want, wantErr)
		}
	})
}

// TestTrimRightSpaceNULByTheWord: every mix of spaces, NULs and other
// bytes at every alignment trims as bytes.TrimRight does.
func TestTrimRightSpaceNULByTheWord(t *testing.T) {
	alphabet := []byte{' ', 0, 'x', 0x20 | 0x80, 0x01}
	for n := 0; n <= 20; n++ {
		for seed := 0; seed < 400; seed++ {
			b := make([]byte, n)
			x := uint32(seed*2654435761 + n)
			for i := range b {
				x = x*1664525 + 1013904223
				// Mostly padding, so that whole words of it occur.
				if x>>28 < 12 {
					b[i] = alphabet[x>>27&1]
				} else {
					b[i] = alphabet[int(x>>24)%len(alphabet)]
				}
			}
			if got, want := trimRightSpaceNUL(b), bytes.TrimRight(b, " \x00"); !bytes.Equal(got, want) {
				t.Fatalf("%q: got %q, want %q", b, got, want)
			}
		}
	}
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], 0x2020202020202020)
	if len(trimRightSpaceNUL(w[:])) != 0 {
		t.Fatal("a word of spaces is not trimmed")
	}
}

// FuzzJSONStringAsBefore: core.AppendJSONString, which appends runs, is
// the byte-by-byte escaper it replaced.
func FuzzJSONStringAsBefore(f *testing.F) {
	for _, s := range []string{"", "abc", "\"", "\\", "a\nb\rc\td", "\x00\x1f\x7f", "é日本", "x\"y\\z\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if got, want := core.AppendJSONString([]byte("x"), s), refJSONString([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		if got, want := core.AppendJSONString([]byte("x"), string(s)), refJSONString([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("%q (string): got %s, want %s", s, got, want)
		}
	})
}

// TestShortDecimalAsFloat: for random plain decimals of every length,
// sign, leading and trailing zeros, the number field's JSON is the
// float's ('g', shortest) that it was before, byte for byte.
func TestShortDecimalAsFloat(t *testing.T) {
	d := &dbfReader{}
	x := uint64(1)
	rnd := func(n int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	fast := 0
	for range 300000 {
		var b []byte
		if rnd(3) == 0 {
			b = append(b, '-')
		}
		for range rnd(3) {
			b = append(b, '0')
		}
		for range rnd(10) {
			b = append(b, byte('0'+rnd(10)))
		}
		if len(b) == 0 || b[len(b)-1] == '-' || rnd(4) != 0 {
			b = append(b, byte('0'+rnd(10)))
		}
		if rnd(4) != 0 {
			b = append(b, '.')
			for range rnd(3) {
				b = append(b, '0')
			}
			for range 1 + rnd(12) {
				b = append(b, byte('0'+rnd(10)))
			}
			for range rnd(3) {
				b = append(b, '0')
			}
		}
		if _, ok := appendShortDecimal(nil, b); ok {
			fast++
		}
		for _, f := range []dbfField{{typ: 'N', decimals: 4, length: len(b)}, {typ: 'F', length: len(b)}} {
			want, wantErr := refAppendValue(nil, f, b)
			got, err := d.appendValue(nil, f, b)
			if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%q: got %s, %v; want %s, %v", b, got, err, want, wantErr)
			}
		}
	}
	if fast < 100000 {
		t.Fatalf("only %d decimals took the short path", fast)
	}
}
