package main

import (
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestServeSummaryCountsEveryOutcome: serve's closing line counts every
// write gate outcome, so that its events add up: a run whose truncated
// version a guard held, and one whose mirrored delete retired a source,
// said nothing of either (7 events: 3 written, 2 duplicates, 1 superseded,
// and the seventh nowhere).
func TestServeSummaryCountsEveryOutcome(t *testing.T) {
	t.Parallel()
	m := ingest.NewMetrics(nil)
	m.EventsReceived.Add(8)
	m.WriteGate.WithLabelValues("written").Add(3)
	m.Claims.WithLabelValues("duplicate").Add(2)
	m.WriteGate.WithLabelValues("superseded").Inc()
	m.WriteGate.WithLabelValues("pending").Inc()
	m.WriteGate.WithLabelValues("retired").Inc()
	s := summary(m)
	require.Contains(t, s, "serve: 8 events: 3 written, 2 duplicates stopped at the claim gate, 0 at the write gate, 1 superseded, ")
	require.Contains(t, s, " 1 pending (held by a guard), ")
	require.Contains(t, s, " 1 deletes applied, ")
}
