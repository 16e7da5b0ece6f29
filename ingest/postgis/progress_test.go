package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestProgressReportsReadingThenWriting: a job reports its features as it
// reads them, in order, then once more when every feature is read and the
// write gate takes over; the last count is the file's feature count.
func TestProgressReportsReadingThenWriting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var got []ingest.JobProgress
	b.svc.ProgressInterval = 1 // every check: every 256 features
	b.svc.Progress = func(p ingest.JobProgress) { got = append(got, p) }
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))

	res := b.svc.Run(context.Background(), job)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)

	require.GreaterOrEqual(t, len(got), 4241/256+1, "a report per 256 features read, then one for writing")
	last := got[len(got)-1]
	require.Equal(t, ingest.PhaseWriting, last.Phase)
	require.EqualValues(t, 4241, last.Features, "every feature of the file was read")
	require.Equal(t, job.ID, last.JobID)
	for i, p := range got[:len(got)-1] {
		require.Equal(t, ingest.PhaseReading, p.Phase)
		require.EqualValues(t, 256*(i+1), p.Features)
		require.LessOrEqual(t, p.Elapsed, last.Elapsed)
	}

	// A duplicate stopped at the claim gate reads nothing and reports nothing.
	got = nil
	again := b.svc.Run(context.Background(), localJob(t, epinay, ingest.DefaultParams("parcels")))
	require.Equal(t, ingest.AlreadyPresent, again.Outcome)
	require.Empty(t, got)
}
