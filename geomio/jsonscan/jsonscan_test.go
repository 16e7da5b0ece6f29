package jsonscan

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseNumberMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "13.0883611", "52.3383361", "1e22", "1e23", "123456789012345678", "1234567890123456789", "12345678901234567890", "9007199254740993", "0.000000000000000000000001", "4.9e-324", "1.7976931348623157e308", "1e-400", "0.1e1", "-12.5E-3", "100000000000000000000000.5", "0.30000000000000004", "2.2250738585072011e-308", "123456.78901234567"} {
		want, err := strconv.ParseFloat(s, 64)
		got, end := ParseNumber([]byte(s), 0)
		if err != nil {
			if end >= 0 {
				t.Errorf("%s: got %v, want an error", s, got)
			}
			continue
		}
		if end != len(s) || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: got %v (end %d), want %v", s, got, end, want)
		}
	}
}

// TestSkipValue: a value ends where it ends whatever follows it, strings
// report their escapes, and an unclosed string, array or object is -1.
func TestSkipValue(t *testing.T) {
	for _, v := range []string{`"plain"`, `"a \"quoted\" word"`, `"back\\"`, `"\u00e9t\u00e9 ]}"`, `""`,
		`{"a":[1,{"b":"]}"}],"c":null}`, `[]`, `[[[]]]`, `{"k":"{"}`, `-12.5e3`, `0`, `true`, `false`, `null`,
		`"` + strings.Repeat("long run of text ", 20) + `\\"`} {
		for _, after := range []string{"", ",", "}", "]", " ,", "\n}"} {
			b := []byte(v + after)
			if got := SkipValue(b, 0); got != len(v) {
				t.Errorf("SkipValue(%q) = %d, want %d", b, got, len(v))
			}
			if v[0] == '"' {
				end, esc := StringEnd(b, 0)
				if end != len(v) || esc != strings.Contains(v, `\`) {
					t.Errorf("StringEnd(%q) = %d, %v; want %d, %v", b, end, esc, len(v), strings.Contains(v, `\`))
				}
			}
		}
	}
	for _, v := range []string{`"open`, `"ends in a backslash\`, `{"a":1`, `[1,[2]`, `{"a":"}"`} {
		if got := SkipValue([]byte(v), 0); got != -1 {
			t.Errorf("SkipValue(%q) = %d, want -1", v, got)
		}
	}
	if end, _ := StringEnd([]byte(`"open\"`), 0); end != -1 {
		t.Errorf("an unclosed string ends at %d", end)
	}
}

// TestNextStringSpecial: the word-at-a-time search finds the byte the
// byte-at-a-time one finds, for every special byte at every place in
// every alignment, among ordinary bytes of every kind (ASCII, UTF-8,
// bytes just above each special one).
func TestNextStringSpecial(t *testing.T) {
	slow := func(b []byte, i int) int {
		for i < len(b) && !strClass[b[i]] {
			i++
		}
		return i
	}
	fill := []byte("a\x20\x21\x23\x5b\x5d\x7f\x80\x9f\xa0\xc3\xa9\xff\x60\xdc")
	for n := 0; n <= 40; n++ {
		for _, f := range fill {
			b := make([]byte, n)
			for k := range b {
				b[k] = f
			}
			for start := 0; start <= n; start++ {
				if got, want := NextStringSpecial(b, start), slow(b, start); got != want {
					t.Fatalf("%x from %d: %d, want %d", b, start, got, want)
				}
			}
			for at := 0; at < n; at++ {
				for sp := 0; sp < 0x100; sp++ {
					if !strClass[sp] {
						continue
					}
					c := append([]byte(nil), b...)
					c[at] = byte(sp)
					if at+1 < n {
						c[at+1] = 0 // a second special byte after it
					}
					for _, start := range []int{0, at} {
						if got, want := NextStringSpecial(c, start), slow(c, start); got != want {
							t.Fatalf("%x from %d: %d, want %d", c, start, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkScanString: the strings of a parcel's properties (the typed
// case of bench-write-gate.sh), keys and values.
func BenchmarkScanString(b *testing.B) {
	props := []byte(`{"parcel_id":"BE-0000-0000-2","owner":"Mikuláš und Aleksandra Jäger","land_use":"R1","apn_code":"1","county":"06037","zoning":" Z-1 ","city":"City 1","street":"1 Main St","zip":"00001","homestead":"Y","sold_on":"1951-02-02","updated":"2024-02-02T01:01:01Z","note":"n1"}`)
	var at []int
	for i := 0; i < len(props); i++ {
		if props[i] == '"' {
			at = append(at, i)
			i, _ = ScanString(props, i)
			i--
		}
	}
	b.SetBytes(int64(len(props)))
	for b.Loop() {
		for _, i := range at {
			if j, _ := ScanString(props, i); j < 0 {
				b.Fatal("not a string")
			}
		}
	}
}
