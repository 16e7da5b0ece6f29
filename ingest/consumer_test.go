package ingest_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/queue"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// memConsumer is a Consumer on the inbox at dir and store, stopping once
// idle for half a second.
func memConsumer(t *testing.T, dir string, store *ingesttest.MemStore) *ingest.Consumer {
	t.Helper()
	box, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { box.Close() })
	rs, err := ingest.ParseRoutes([]string{"admin/=admin_units", "=parcels"})
	require.NoError(t, err)
	svc := ingest.NewService(store, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	svc.Lease, svc.TempDir = time.Minute, t.TempDir()
	return &ingest.Consumer{Service: svc, Receiver: box, Router: ingest.NewRouter(rs, nil), Objects: localfs.Inbox{Dir: box.Dir()},
		PipelineVersion: ingest.DefaultPipelineVersion, Workers: 4, MaxReceives: 2,
		Grace: 10 * time.Second, BackoffBase: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond, UntilIdle: 500 * time.Millisecond}
}

func runUntilIdle(t *testing.T, c *ingest.Consumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.Run(ctx)
	require.NoError(t, ctx.Err(), "the consumer did not become idle in time")
}

// TestConsumerOnTheMemStore: the consumer's whole path from a message to
// its ack, dead letter or retry, with no database. Files are routed by
// their folder; a sidecar alone is filtered; a shapefile missing its .dbf
// is retried until MaxReceives, then dead-lettered; a file that does not
// parse is recorded FAILED and dead-lettered. A second consumer on the same
// files finds every written job committed (through the batch claim), and
// downloads none of them.
func TestConsumerOnTheMemStore(t *testing.T) {
	dir := t.TempDir()
	squares(t, filepath.Join(dir, "admin", "units.geojson"), 2, 10)
	squares(t, filepath.Join(dir, "parcels", "a.geojson"), 3, 10)
	squares(t, filepath.Join(dir, "parcels", "b.geojson"), 1, 12)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "b.dbf"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "half.shp"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "half.shx"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parcels", "broken.geojson"), []byte(`{"type":"FeatureCollection","features":[{"type":"Feat`), 0o644))
	store := ingesttest.NewMemStore()

	c := memConsumer(t, dir, store)
	runUntilIdle(t, c)
	m := c.Service.Metrics
	require.EqualValues(t, 3, testutil.ToFloat64(m.WriteGate.WithLabelValues("written")))
	require.EqualValues(t, 2, testutil.ToFloat64(m.EventsFiltered.WithLabelValues(ingest.FilterSidecar)), "b.dbf and half.shx")
	require.EqualValues(t, 2, testutil.ToFloat64(m.DeadLettered), "half.shp and broken.geojson")
	reason, err := os.ReadFile(filepath.Join(dir, ".dead-letter", "parcels", "half.shp.reason"))
	require.NoError(t, err)
	require.Contains(t, string(reason), "gave up waiting")
	reason, err = os.ReadFile(filepath.Join(dir, ".dead-letter", "parcels", "broken.geojson.reason"))
	require.NoError(t, err)
	require.Contains(t, string(reason), "broken.geojson")

	// The same files again: every committed job is stopped before a
	// copy.
	c2 := memConsumer(t, dir, store)
	runUntilIdle(t, c2)
	m2 := c2.Service.Metrics
	require.Zero(t, testutil.ToFloat64(m2.WriteGate.WithLabelValues("written")))
	require.EqualValues(t, 3, testutil.ToFloat64(m2.Claims.WithLabelValues("duplicate")))
	require.EqualValues(t, 1, testutil.ToFloat64(m2.Downloads), "only broken.geojson's: a FAILED job is claimed again")
}
