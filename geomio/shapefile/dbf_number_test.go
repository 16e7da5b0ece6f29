package shapefile

import (
	"testing"
)

// TestDBFNumbers: numeric fields as JSON, from padded record bytes:
// integers, decimals, blanks and overflow stars as null, Unicode white
// space trimmed as strings.TrimSpace would, garbage refused.
func TestDBFNumbers(t *testing.T) {
	d := &dbfReader{}
	for _, c := range []struct {
		typ      byte
		decimals int
		raw, out string
		bad      bool
	}{
		{'N', 0, "       42", "42", false},
		{'N', 0, "-7        ", "-7", false},
		{'N', 2, "  309439.25", "309439.25", false},
		{'F', 3, "1.5e3\x00\x00", "1500", false},
		{'N', 0, "          ", "null", false},
		{'N', 0, "\x00\x00\x00", "null", false},
		{'N', 0, "*****", "null", false},
		{'N', 0, "  -  ", "null", false},
		{'N', 0, " . ", "null", false},
		{'N', 0, "\u00a012\u00a0", "12", false},
		{'N', 0, "\u00a0", "null", false},
		{'N', 0, "12x", "", true},
		{'F', 0, "NaN", "", true},
		{'N', 0, "99999999999999999999", "1e+20", false},
	} {
		got, err := d.appendValue(nil, dbfField{typ: c.typ, decimals: c.decimals, length: len(c.raw)}, []byte(c.raw))
		if c.bad {
			if err == nil {
				t.Errorf("%q: got %s, want an error", c.raw, got)
			}
			continue
		}
		if err != nil || string(got) != c.out {
			t.Errorf("%q: got %s, %v; want %s", c.raw, got, err, c.out)
		}
	}
}
