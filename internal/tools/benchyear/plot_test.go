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
	require.Equal(t, 1010, img.Bounds().Dx())
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

// The y axis runs from 0 to a round value at or above the maximum, in at
// most five round steps, each labelled with the decimals it needs.
func TestYScale(t *testing.T) {
	for _, c := range []struct{ max, top, step float64 }{
		{37, 40, 10}, {0.37, 0.4, 0.1}, {1250, 1250, 250}, {5, 5, 1}, {9.9, 10, 2}, {0.012, 0.0125, 0.0025}, {0, 1, 0.2},
	} {
		top, step := yScale(c.max)
		require.InDelta(t, c.top, top, 1e-9, "max %v", c.max)
		require.InDelta(t, c.step, step, 1e-9, "max %v", c.max)
		require.LessOrEqual(t, top/step, 5.0+1e-9)
		require.GreaterOrEqual(t, top, c.max)
	}
	require.Equal(t, "0.50", tickLabel(0.5, 0.25))
	require.Equal(t, "750", tickLabel(750, 250))
	require.Equal(t, "0.4", tickLabel(0.4, 0.1))
}

// Each panel's y axis carries tick labels left of it: dark pixels in the
// margin where the plot had none before.
func TestWritePlotLabelsTheYAxis(t *testing.T) {
	rs := []month{{Month: 0, ProbeWall: 3, Q: map[string]stats{"tile/geoingest/warm": {1, 37}}}, {Month: 1, ProbeWall: 4, Q: map[string]stats{"tile/geoingest/warm": {1, 12}}}}
	path := filepath.Join(t.TempDir(), "plot.png")
	require.NoError(t, writePlot(path, rs))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	for _, x0 := range []int{60, 1010 - 20 - 440} { // each panel's y axis
		dark := 0
		for x := x0 - 40; x < x0-4; x++ {
			for y := 40; y < 440-90; y++ {
				if r, _, _, _ := img.At(x, y).RGBA(); r < 0x4000 {
					dark++
				}
			}
		}
		require.Greater(t, dark, 50, "tick labels left of the axis at x=%d", x0)
	}
}
