package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	sdkqueue "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/ingest/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	azq "github.com/geoingest/geoingest/queue/azqueue"
	"github.com/stretchr/testify/require"
)

// azurePut uploads file (or "literal:TEXT") through c.
func azurePut(t *testing.T, c *sdkblob.Client, container, key, file string) string {
	t.Helper()
	body := []byte(strings.TrimPrefix(file, "literal:"))
	if !strings.HasPrefix(file, "literal:") {
		var err error
		body, err = os.ReadFile(file)
		require.NoError(t, err)
	}
	resp, err := c.UploadBuffer(context.Background(), container, key, body, nil)
	require.NoError(t, err)
	return strings.Trim(string(*resp.ETag), `"`)
}

// TestServeAzureEndToEnd: serve --queue-url azqueue://… on Azurite. The
// uploads go through the Event Grid stand-in (internal/testsupport/azgrid), which puts
// every BlobCreated event on the queue twice. serve writes each blob's
// features exactly once, stops every duplicate at a gate, filters the
// sidecars, and dead-letters the unparseable blob with its reason. A
// second version of one blob replaces the first; a late copy of the
// first's event changes nothing; a delete on a route that mirrors deletes
// retires the source.
func TestServeAzureEndToEnd(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	az := testsrv.Azurite(t)
	q, dlq := az.NewQueue(t, "events"), az.NewQueue(t, "events-dlq")
	br, err := azgrid.New(az.BlobURL, az.Blob, q)
	require.NoError(t, err)
	br.Copies = 2
	proxy := httptest.NewServer(br)
	t.Cleanup(proxy.Close)
	up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
	require.NoError(t, err)
	container := az.NewContainer(t, "uploads")

	six := "../../testdata/corpus/six_counties/six_counties"
	aTag := azurePut(t, up, container, "parcels/city a+b.geojson", "../../testdata/corpus/montreal_landuse_overpass/export.geojson")
	azurePut(t, up, container, "admin/admin.geojson", "../../testdata/synthetic/admin.geojson")
	for _, ext := range []string{".shx", ".dbf", ".prj", ".shp"} {
		azurePut(t, up, container, "parcels/six"+ext, six+ext)
	}
	azurePut(t, up, container, "parcels/bad.geojson", "literal:this is not GeoJSON at all")
	const goodJobs, events = 3, 7
	require.Len(t, br.Sent(), events)
	require.Empty(t, br.Errors())

	env := map[string]string{"AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString}
	qURL := "azqueue://" + testsrv.AzureAccount + "/" + queueName(q)
	dlqURL := "azqueue://" + testsrv.AzureAccount + "/" + queueName(dlq)
	srv := startServe(t, env, "--queue-url", qURL, "--dlq-url", dlqURL, "--workers", "4", "--database-url", db,
		"--visibility", "20s", "--wait", "1s", "--backoff", "1s", "--max-receives", "3", "--lease", "10s",
		"--route", "parcels/=parcels?guards=off", "--route", "admin/=admin_units+deletes") // the second version shrinks on purpose
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", srv.stderr.String())
		}
	})
	// The lease (10 s) outlasts a job on a loaded machine: at 3 s a job
	// that took 4.2 s lost it, and its copy counted a fourth duplicate.
	eventually(t, 3*time.Minute, "both copies of every event, acked or dead-lettered", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*events &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") >= 2 &&
			queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) >= goodJobs &&
			// a copy that found its claim held comes back after the lease
			srv.metric(t, `geoingest_claims_total{result="duplicate"}`)+srv.metric(t, `geoingest_write_gate_total{result="already_present"}`) >= goodJobs
	})
	written := srv.metric(t, `geoingest_write_gate_total{result="written"}`)
	lost := srv.metric(t, `geoingest_claims_total{result="duplicate"}`)
	present := srv.metric(t, `geoingest_write_gate_total{result="already_present"}`)
	require.EqualValues(t, goodJobs, written)
	require.EqualValues(t, goodJobs, lost+present, "each duplicate is stopped at the claim gate or the write gate")
	require.EqualValues(t, 2*3, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`))
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_bucket = $1 AND source_key = 'parcels/city a+b.geojson' AND version_token = $2`,
		container, aTag), "the job names the ETag of the write")
	require.EqualValues(t, 0, queryInt(t, db, `
		SELECT count(*) FROM jobs j WHERE j.feature_count <>
		  (SELECT count(*) FROM parcels p WHERE p.job_ref = j.job_ref) + (SELECT count(*) FROM admin_units u WHERE u.job_ref = j.job_ref)`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key = 'parcels/bad.geojson' AND last_error <> ''`))

	out, err := dlq.DequeueMessages(context.Background(), &sdkqueue.DequeueMessagesOptions{NumberOfMessages: ptrTo(int32(32))})
	require.NoError(t, err)
	require.Len(t, out.Messages, 2)
	for _, m := range out.Messages {
		var dl azq.DeadLetterBody
		require.NoError(t, json.Unmarshal([]byte(*m.MessageText), &dl))
		require.Contains(t, dl.Reason, "azblob://"+container+"/parcels/bad.geojson")
		evs, err := azblob.ParseEvents([]byte(dl.Message))
		require.NoError(t, err, "the dead letter keeps the event as it came")
		require.Equal(t, "parcels/bad.geojson", evs[0].Key)
	}

	// A second version replaces the first; a late copy of the first
	// version's event changes nothing.
	firstEvent := br.Sent()[0]
	a2Tag := azurePut(t, up, container, "parcels/city a+b.geojson", "../../testdata/corpus/mixed_feature_geojson/mixed_feature.json")
	require.NotEqual(t, aTag, a2Tag)
	eventually(t, 2*time.Minute, "the second version to become current", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current' AND version_token = $1`, a2Tag) == 1
	})
	require.NoError(t, br.Send(context.Background(), firstEvent))
	// A delete on the route that mirrors deletes retires the admin source.
	_, err = up.DeleteBlob(context.Background(), container, "admin/admin.geojson", nil)
	require.NoError(t, err)
	eventually(t, 2*time.Minute, "the late copy and the delete's two copies, received", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*events+2+1+2 &&
			queryInt(t, db, `SELECT count(*) FROM sources WHERE source_key = 'admin/admin.geojson' AND current_job_id IS NULL`) == 1
	})
	time.Sleep(time.Second)
	require.EqualValues(t, goodJobs+1, srv.metric(t, `geoingest_write_gate_total{result="written"}`))
	srv.stop(t)
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = 'parcels/city a+b.geojson' AND status = 'current' AND version_token = $1`, a2Tag))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(DISTINCT p.job_ref) FROM parcels p JOIN jobs j USING (job_ref) WHERE j.source_key = 'parcels/city a+b.geojson'`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM admin_units u JOIN jobs j USING (job_ref) WHERE j.status = 'current'`))
	code, outv, errOut := run(t, map[string]string{"DATABASE_URL": db}, "verify")
	require.Equal(t, 0, code, outv+errOut)
}

// newAzgridClient is a Blob client whose writes go through the Event
// Grid stand-in, which queues each write's event on q.
func newAzgridClient(t *testing.T, az *testsrv.AzureServer, q *sdkqueue.QueueClient) *sdkblob.Client {
	t.Helper()
	br, err := azgrid.New(az.BlobURL, az.Blob, q)
	require.NoError(t, err)
	proxy := httptest.NewServer(br)
	t.Cleanup(proxy.Close)
	up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
	require.NoError(t, err)
	return up
}

// queueName is the queue's name, the last part of its URL.
func queueName(q *sdkqueue.QueueClient) string {
	u := strings.TrimSuffix(q.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}

func ptrTo[T any](v T) *T { return &v }
