package ingest

import (
	"fmt"
	"strings"
	"time"
)

// ParseSince reads a time back, as every command's --since and --as-of
// and the console API's since and as_of take it: an RFC 3339 time
// (2026-01-02T15:04:05Z, or 2026-01-02 15:04:05Z as the tables print it), a date (2026-01-02: midnight UTC), or a
// duration back from now (10m, 24h; not negative). Spaces around it are
// ignored. A bad one is Permanent, its message naming the three forms.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	// RFC 3339 with a space for the T (its section 5.6 allows it), as the
	// tables print a time (2026-01-02 15:04:05Z), and psql's timestamptz
	// (2026-01-02 15:04:05.123+00), so that a time read off them can be
	// pasted back.
	for _, layout := range []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
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
