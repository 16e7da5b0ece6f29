package ingest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeadLetterJobIDs: the job ids are read from a reason as settle
// writes it, each once, and nothing else is taken for one.
func TestDeadLetterJobIDs(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("0", 63)+"f"
	reason := "s3://u/x.geojson (job " + a + "): bad; s3://u/y (job " + b + "): worse; s3://u/x.geojson (job " + a + "): again"
	require.Equal(t, []string{a, b}, DeadLetterJobIDs(reason))
	require.Empty(t, DeadLetterJobIDs("invalid json at byte 3"))
	require.Empty(t, DeadLetterJobIDs("(job "+strings.Repeat("A", 64)+")"), "job ids are lower-case hex")
	var v verdict
	(&Consumer{}).settle(t.Context(), &v, Result{Outcome: Failed, Source: "s3://u/x.geojson", JobID: a, Err: Permanentf("bad")})
	require.Equal(t, []string{a}, DeadLetterJobIDs(strings.Join(v.reasons, "; ")), "settle's reason names the job")
}
