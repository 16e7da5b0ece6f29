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

// TestTrimMemoryOnceAtTheFirstFeature: a job whose input is 1 MiB or
// more calls TrimMemory once, on its first feature (before any progress
// report, which comes every 256); a smaller input never calls it.
func TestTrimMemoryOnceAtTheFirstFeature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls, reportsBefore int
	reports := 0
	b.svc.ProgressInterval = 1
	b.svc.Progress = func(ingest.JobProgress) { reports++ }
	b.svc.TrimMemory = func() { calls++; reportsBefore = reports }

	res := b.svc.Run(context.Background(), localJob(t, epinay, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Equal(t, 1, calls, "epinay's 2.2 MB: one trim")
	require.Zero(t, reportsBefore, "the trim comes with the first feature")

	calls = 0
	small := "../../testdata/corpus/six_counties/six_counties.shp"
	res = b.svc.Run(context.Background(), localJob(t, small, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Zero(t, calls, "an input under 1 MiB is not trimmed for")
}
