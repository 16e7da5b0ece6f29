package core

import (
	"strings"
	"testing"
)

// TestCheckPropertiesAtTheBounds: properties too short to break a limit
// are not scanned; at the shortest text that can, the scan still finds
// the member too many and the value one byte too long.
func TestCheckPropertiesAtTheBounds(t *testing.T) {
	l := Limits{MaxProperties: 3, MaxPropertyBytes: 8}
	for _, c := range []struct {
		props string
		over  string
	}{
		{`{"":0,"":0,"":0}`, ""},
		{`{"":0,"":0,"":0,"":0}`, LimitProperties},
		{`{"a":1,"b":2,"c":3}`, ""},
		{`{"a":1,"b":2,"c":3,"d":4}`, LimitProperties},
		{`{"":"123456"}`, ""},
		{`{"":"1234567"}`, LimitPropertyBytes},
		{`{"a":[1,2,3,4]}`, LimitPropertyBytes},
		{`not json`, ""},
	} {
		err := l.checkProperties([]byte(c.props))
		switch {
		case c.over == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.props, err)
		case c.over != "" && (err == nil || err.Limit != c.over):
			t.Errorf("%s: %v, want over %s", c.props, err, c.over)
		}
	}
	big := Limits{MaxProperties: 10_000, MaxPropertyBytes: 1 << 20}
	if err := big.checkProperties([]byte(`{"v":"` + strings.Repeat("x", 1<<20) + `"}`)); err == nil || err.Limit != LimitPropertyBytes {
		t.Errorf("a value of 1 MiB and 2 bytes: %v, want over %s", err, LimitPropertyBytes)
	}
}
