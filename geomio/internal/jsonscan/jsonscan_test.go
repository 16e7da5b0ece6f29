package jsonscan

import (
	"math"
	"strconv"
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
