package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestProgressLine: the reading line shows the features read, the writing
// line replaces it in place, and clear blanks the line and stops the
// writing phase's ticker.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{line: termLine{w: &buf}, on: true}
	p.update(ingest.JobProgress{Source: "file:///x.geojson", Phase: ingest.PhaseReading, Features: 512, Elapsed: time.Second})
	require.Equal(t, "\rfile:///x.geojson: 512 features read (512/s)", buf.String())
	p.update(ingest.JobProgress{Source: "file:///x.geojson", Phase: ingest.PhaseWriting, Features: 600, Elapsed: 2 * time.Second})
	require.Contains(t, buf.String(), "\rfile:///x.geojson: 600 features read; writing (normalise, index, ledger), 2s elapsed")
	require.NotNil(t, p.stop, "the writing phase ticks")
	p.clear()
	require.Nil(t, p.stop)
	out := buf.String()
	require.True(t, strings.HasSuffix(out, "\r"), "clear returns to the start of a blank line: %q", out)
	require.Equal(t, 0, p.line.lastLen)
	p.clear() // idempotent
	require.Equal(t, out, buf.String())
}
