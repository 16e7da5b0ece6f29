package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatchIoUFlagRefusesZero: `--match-iou 0` was read as the default
// (0.9), silently, although the help and a route's match-iou=0 say the
// ratio is in (0, 1]. The flag refuses it (exit 2, the usage error) before
// any file or database is touched, as it does NaN and 1.5; a ratio in
// range is kept.
func TestMatchIoUFlagRefusesZero(t *testing.T) {
	for _, cmd := range []string{"ingest", "backfill"} {
		for _, bad := range []string{"0", "-0.1", "1.5", "NaN", "x"} {
			code, _, errOut := run(t, map[string]string{}, cmd, "--match-iou", bad, "/nonexistent.geojson")
			require.Equal(t, 2, code, "%s --match-iou %s: %s", cmd, bad, errOut)
			require.Contains(t, errOut, "want a ratio in (0, 1]", bad)
		}
	}
	var v float64
	f := matchIoUFlag{&v}
	require.NoError(t, f.Set("0.75"))
	require.Equal(t, 0.75, v)
	require.Equal(t, "0.75", f.String())
}
