package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// closingFetcher makes the database unavailable (closes the pool), then
// fails the job permanently.
type closingFetcher struct{ close func() }

func (f closingFetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	f.close()
	return ingest.Fetched{}, ingest.Permanentf("unsupported format (test)")
}

// TestPermanentFailureUnrecordedIsTransient: a permanent failure whose
// reason cannot be recorded because the database has gone away is
// returned as transient, so that serve retries it rather than dead-
// lettering a failure nobody can query; no permanent failure is counted.
func TestPermanentFailureUnrecordedIsTransient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))
	job.Fetch = closingFetcher{close: b.pool.Close}
	res := b.svc.Run(context.Background(), job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Transient, ingest.KindOf(res.Err), "%v", res.Err)
	require.Contains(t, res.Err.Error(), "unsupported format (test)")
	require.Contains(t, res.Err.Error(), "recording the failure")
	require.Zero(t, testutil.ToFloat64(b.metrics.JobsFailed.WithLabelValues("permanent")))
	require.EqualValues(t, 1, testutil.ToFloat64(b.metrics.JobsFailed.WithLabelValues("transient")))
}
