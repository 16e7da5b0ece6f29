package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestBenchCloudsSmallJobs measures small-job throughput on each cloud's
// emulator stack: N one-parcel GeoJSON objects (GEOINGEST_BENCH_CLOUDS=N)
// are uploaded and announced, then one `serve` with 4 workers on a fresh
// database runs until every job is written; jobs/s is N over the time from
// serve's start to the last write. scripts/bench-clouds.sh runs it; without
// the variable it is skipped (a measurement, not a test).
func TestBenchCloudsSmallJobs(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GEOINGEST_BENCH_CLOUDS"))
	if n <= 0 {
		t.Skip("a measurement: set GEOINGEST_BENCH_CLOUDS=N (scripts/bench-clouds.sh)")
	}
	dir := t.TempDir()
	tinyFiles(t, dir, n)
	file := func(i int) string { return filepath.Join(dir, "parcels", fmt.Sprintf("p%03d.geojson", i)) }
	measure := func(t *testing.T, name string, env map[string]string, args ...string) {
		db := pgtest.NewDB(t)
		start := time.Now()
		srv := startServe(t, env, append([]string{"--database-url", db, "--workers", "4", "--wait", "1s", "--report-refresh", "1m"}, args...)...)
		eventually(t, 20*time.Minute, "every job written", func() bool {
			return srv.metric(t, `geoingest_write_gate_total{result="written"}`) >= float64(n)
		})
		took := time.Since(start)
		srv.stop(t)
		require.EqualValues(t, n, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
		t.Logf("BENCH %s: %d small jobs in %.2f s: %.1f jobs/s", name, n, took.Seconds(), float64(n)/took.Seconds())
	}
	t.Run("sqs", func(t *testing.T) {
		st, sq := testsrv.S3(t), testsrv.SQS(t)
		testsrv.Env(t, sq.URL, st.URL)
		q := sq.NewQueue(t, "bench", 60*time.Second)
		st.NewBucket(t, "bench", true)
		for i := 0; i < n; i++ {
			o := upload(t, st.Client, "bench", fmt.Sprintf("parcels/p%03d.geojson", i), file(i), i+1)
			sendBody(t, sq.Client, q, notification("bench", o))
		}
		measure(t, "sqs (fauxqs + gofakes3)", nil, "--queue-url", q)
	})
	t.Run("pubsub", func(t *testing.T) {
		g := testsrv.GCP(t)
		topic := g.NewTopic(t, "bench")
		sub := g.NewSubscription(t, topic, 60*time.Second, "")
		bucket := testsrv.Unique("bench")
		g.NewBucket(t, bucket, false, topic)
		for i := 0; i < n; i++ {
			gcsPut(t, g, bucket, fmt.Sprintf("parcels/p%03d.geojson", i), file(i))
		}
		measure(t, "pubsub (pstest + fake-gcs-server, its own notifications)", nil, "--queue-url", "pubsub://"+sub)
	})
	t.Run("azqueue", func(t *testing.T) {
		az := testsrv.Azurite(t)
		q := az.NewQueue(t, "bench")
		br, err := azgrid.New(az.BlobURL, az.Blob, q)
		require.NoError(t, err)
		proxy := httptest.NewServer(br)
		t.Cleanup(proxy.Close)
		up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
		require.NoError(t, err)
		container := az.NewContainer(t, "bench")
		for i := 0; i < n; i++ {
			azurePut(t, up, container, fmt.Sprintf("parcels/p%03d.geojson", i), file(i))
		}
		measure(t, "azqueue (Azurite + azgrid)", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString},
			"--queue-url", "azqueue://"+testsrv.AzureAccount+"/"+queueName(q))
	})
}
