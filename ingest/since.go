package ingest

import (
	"fmt"
	"strings"
	"time"
)

// ParseSince reads a time back, as every command's --since and --as-of
// and the console API's since and as_of take it: an RFC 3339 time
// (2026-01-02T15:04:05Z), a date (2026-01-02: midnight UTC), or a
// duration back from now (10m, 24h; not negative). Spaces around it are
// ignored. A bad one is Permanent, its message naming the three forms.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, &Error{Kind: Permanent, Err: fmt.Errorf("%q: a duration back from now must not be negative", s)}
		}
		return now.Add(-d), nil
	}
	return time.Time{}, Permanentf("%q is neither a duration back from now (10m, 24h), a date (2026-01-02) nor an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}
