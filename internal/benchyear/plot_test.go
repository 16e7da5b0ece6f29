package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writePlot writes a PNG of the asked size from the months' results, and
// writeCSV one line per month and a header.
func TestWritePlotAndCSV(t *testing.T) {
	var rs []month
	for m := 0; m < 4; m++ {
		rs = append(rs, month{Month: m, ProbeWall: 1 + float64(m), ProbeWrite: 0.5, ProbeRefresh: 0.2,
			Q: map[string]stats{"tile/geoingest/warm": {1, 2 + float64(m)}, "tile/one/warm": {1, 2}}})
	}
	dir := t.TempDir()
	require.NoError(t, writePlot(filepath.Join(dir, "plot.png"), rs))
	f, err := os.Open(filepath.Join(dir, "plot.png"))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 960, img.Bounds().Dx())
	require.NoError(t, writeCSV(filepath.Join(dir, "r.csv"), rs))
	b, err := os.ReadFile(filepath.Join(dir, "r.csv"))
	require.NoError(t, err)
	require.Equal(t, 5, len(splitLines(string(b))))
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i, c := range s {
		if c == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
