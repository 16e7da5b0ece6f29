package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// squares writes a GeoJSON file of n small squares near (x, 50).
func squares(t *testing.T, path string, n int, x float64) string {
	t.Helper()
	body := `{"type":"FeatureCollection","features":[`
	for i := range n {
		if i > 0 {
			body += ","
		}
		a := x + float64(i)*0.01
		body += fmt.Sprintf(`{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,50],[%g,50],[%g,50.005],[%g,50.005],[%g,50]]]}}`,
			i, a, a+0.005, a+0.005, a, a)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body+"]}"), 0o644))
	return path
}

// memService is a Service on an in-memory store.
func memService(t *testing.T) (*ingest.Service, *ingesttest.MemStore) {
	store := ingesttest.NewMemStore()
	svc := ingest.NewService(store, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	svc.Lease = time.Minute
	svc.TempDir = t.TempDir()
	return svc, store
}

// fileJob is the job of the file at path for parcels.
func fileJob(t *testing.T, path string) ingest.Job {
	t.Helper()
	it := (&ingest.Planner{Files: localfs.Files{}, Params: ingest.DefaultParams("parcels")}).PlanPath(context.Background(), path)
	require.NoError(t, it.Err)
	return it.Job
}

// failingFetch fails every download with err.
type failingFetch struct{ err error }

func (f failingFetch) Fetch(context.Context, string) (ingest.Fetched, error) {
	return ingest.Fetched{}, f.err
}

func TestServiceRunsAJobOnce(t *testing.T) {
	ctx := context.Background()
	svc, store := memService(t)
	job := fileJob(t, squares(t, filepath.Join(t.TempDir(), "a.geojson"), 3, 10))

	res := svc.Run(ctx, job)
	require.Equal(t, ingest.Written, res.Outcome, "%v", res.Err)
	require.EqualValues(t, 3, res.Features)
	require.InDelta(t, 3*0.005*0.005*111_000*71_500, res.AreaM2, 0.02*res.AreaM2)
	require.Equal(t, "COMMITTED", store.ClaimState(job.ID))

	// Delivered again: stopped at the claim gate, before any download.
	res = svc.Run(ctx, job)
	require.Equal(t, ingest.AlreadyPresent, res.Outcome)
	require.EqualValues(t, 1, testutil.ToFloat64(svc.Metrics.Downloads))
	require.EqualValues(t, 1, testutil.ToFloat64(svc.Metrics.Claims.WithLabelValues("duplicate")))
}

func TestServiceHeldClaimIsNotADuplicate(t *testing.T) {
	ctx := context.Background()
	svc, store := memService(t)
	job := fileJob(t, squares(t, filepath.Join(t.TempDir(), "held.geojson"), 1, 10))
	c, err := store.Claim(ctx, job, "another-worker", time.Hour)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, c.Result)

	res := svc.Run(ctx, job)
	require.Equal(t, ingest.Held, res.Outcome)
	require.Equal(t, "another-worker", res.HeldBy)
	require.Greater(t, res.RetryAfter, 59*time.Minute, "the delivery comes back when the lease has ended")
	require.False(t, res.Outcome.Duplicate())
	require.Zero(t, testutil.ToFloat64(svc.Metrics.Downloads))
}

func TestServiceFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("PermanentIsRecordedAndClaimedAgain", func(t *testing.T) {
		svc, store := memService(t)
		p := filepath.Join(t.TempDir(), "broken.geojson")
		require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[{"type":"Feat`), 0o644))
		job := fileJob(t, p)
		res := svc.Run(ctx, job)
		require.Equal(t, ingest.Failed, res.Outcome)
		require.Equal(t, ingest.Permanent, ingest.KindOf(res.Err))
		require.Equal(t, "FAILED", store.ClaimState(job.ID))
		require.Contains(t, store.Failure(job.ID), "file://"+p, "the recorded reason names the upload")
		c, err := store.Claim(ctx, job, "x", time.Minute)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result, "a FAILED job runs again when delivered again")
	})
	t.Run("TransientReleasesTheClaim", func(t *testing.T) {
		svc, store := memService(t)
		job := fileJob(t, squares(t, filepath.Join(t.TempDir(), "t.geojson"), 1, 10))
		job.Fetch = failingFetch{ingest.Transientf("connection reset")}
		res := svc.Run(ctx, job)
		require.Equal(t, ingest.Failed, res.Outcome)
		require.Equal(t, ingest.Transient, ingest.KindOf(res.Err))
		require.Empty(t, store.Failure(job.ID), "a transient failure is not recorded FAILED")
		c, err := store.Claim(ctx, job, "x", time.Minute)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result, "a released claim is won at once")
	})
	t.Run("AChangedObjectIsSuperseded", func(t *testing.T) {
		svc, store := memService(t)
		job := fileJob(t, squares(t, filepath.Join(t.TempDir(), "c.geojson"), 1, 10))
		job.Fetch = failingFetch{fmt.Errorf("412: %w", ingest.ErrObjectChanged)}
		res := svc.Run(ctx, job)
		require.Equal(t, ingest.Superseded, res.Outcome)
		require.Equal(t, "COMMITTED", store.ClaimState(job.ID))
	})
}

func TestServiceVersionsAndRemoval(t *testing.T) {
	ctx := context.Background()
	svc, store := memService(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "v.geojson")
	v1 := fileJob(t, squares(t, p, 2, 10))
	v1.Source.Order = ingest.OrderFromSequencer("10")
	require.Equal(t, ingest.Written, svc.Run(ctx, v1).Outcome)
	v2 := fileJob(t, squares(t, p, 4, 11))
	v2.Source.Order = ingest.OrderFromSequencer("20")
	res := svc.Run(ctx, v2)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Equal(t, v1.ID, res.Replaced)

	src := v2.Source
	src.VersionToken, src.Order = "delete:30", ingest.OrderFromSequencer("30")
	del, err := ingest.NewDeleteJob(src, ingest.DefaultParams("parcels"))
	require.NoError(t, err)
	res = svc.Run(ctx, del)
	require.Equal(t, ingest.Retired, res.Outcome)
	require.Equal(t, v2.ID, res.Replaced)
	cur, err := store.CurrentGeneration(ctx, src.Bucket, src.Key, "parcels", ingest.DefaultPipelineVersion)
	require.NoError(t, err)
	require.Empty(t, cur)
}
