package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseSince: the forms every --since, --as-of, since and as_of take.
func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 12, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02T15:04:05Z":        time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		"2026-01-02T15:04:05.5+02:00": time.Date(2026, 1, 2, 13, 4, 5, 5e8, time.UTC),
		"2026-01-02":                  time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"2026-01-02 15:04:05Z":        time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), // as changes SOURCE prints it
		"2026-01-02 15:04:05.25+01":   time.Date(2026, 1, 2, 14, 4, 5, 25e7, time.UTC),
		" 2026-01-02 ":                time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"24h":                         now.Add(-24 * time.Hour),
		"90m":                         now.Add(-90 * time.Minute),
		"0s":                          now,
	} {
		got, err := ParseSince(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%q: %s, want %s", in, got, want)
	}
	for in, msg := range map[string]string{
		"-1h":                 "must not be negative",
		"yesterday":           "is neither a duration back from now (10m, 24h), a date (2026-01-02) nor an RFC 3339 time",
		"2026-13-01":          "is neither",
		"2026-01-02 15:04:05": "is neither", // no zone: not guessed
		"":                    "is neither",
	} {
		_, err := ParseSince(in, now)
		require.ErrorContains(t, err, msg, in)
		require.Equal(t, Permanent, KindOf(err), in)
	}
}
