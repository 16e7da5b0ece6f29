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
