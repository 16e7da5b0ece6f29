package postgis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// svcBundle is a Service on a database of its own, with what a test reads
// back.
type svcBundle struct {
	svc     *ingest.Service
	pool    *pgxpool.Pool
	metrics *ingest.Metrics
	logs    *testfiles.SyncBuffer
}

// newService makes a Service on the database at dbURL, logging at INFO
// into b.logs.
func newService(t *testing.T, dbURL string) *svcBundle {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	logs := &testfiles.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := ingest.NewService(postgis.NewStore(pool, metrics, log), metrics, log)
	svc.Lease = time.Minute
	return &svcBundle{svc: svc, pool: pool, metrics: metrics, logs: logs}
}

func (b *svcBundle) count(t *testing.T, sql string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// consumerBundle is a Consumer on a Service of its own.
type consumerBundle struct {
	*svcBundle
	cons *ingest.Consumer
}

// newConsumer makes a Consumer on the database at dbURL and recv (without
// a source: the test sets Objects) that stops once idle for a
// second.
func newConsumer(t *testing.T, dbURL string, recv queue.Receiver, routes ...string) *consumerBundle {
	t.Helper()
	sb := newService(t, dbURL)
	rs, err := ingest.ParseRoutes(routes)
	require.NoError(t, err)
	t.Cleanup(func() { recv.Close() })
	return &consumerBundle{svcBundle: sb, cons: &ingest.Consumer{
		Service: sb.svc, Receiver: recv, Router: ingest.NewRouter(rs, nil),
		PipelineVersion: ingest.DefaultPipelineVersion, Workers: 4, MaxReceives: 2,
		Grace: 10 * time.Second, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		UntilIdle: time.Second,
	}}
}

// run runs the consumer until it is idle, failing the test after timeout.
func (b *consumerBundle) run(t *testing.T, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b.cons.Run(ctx)
	require.NoError(t, ctx.Err(), "the consumer did not become idle in time:\n%s", b.logs.String())
	require.True(t, b.cons.Stopping())
}

// put uploads body and returns the event S3 would send for it.
func put(t *testing.T, c *awss3.Client, bucket, key string, body []byte) ingest.Event {
	t.Helper()
	out, err := c.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
	require.NoError(t, err)
	return ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: key, Size: int64(len(body)),
		ETag: strings.Trim(aws.ToString(out.ETag), `"`), VersionID: aws.ToString(out.VersionId)}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	body, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, body, 0o644))
}

// TestConsumerInbox: the consumer on the inbox driver and the store,
// without the CLI. Files are routed by their directory, a sidecar alone is
// filtered, a shapefile without its .dbf is retried until MaxReceives and
// then dead-lettered with its reason; a second consumer on the same
// directory finds every job committed (claim-gate duplicates, also through
// the batch claim) and writes nothing.
func TestConsumerInbox(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "../../testdata/synthetic/admin.geojson", filepath.Join(dir, "admin/admin.geojson"))
	copyFile(t, "../../testdata/corpus/montreal_landuse_overpass/export.geojson", filepath.Join(dir, "montreal.geojson"))
	six := "../../testdata/corpus/six_counties/six_counties"
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		copyFile(t, six+ext, filepath.Join(dir, "parcels/six"+ext))
	}
	for _, ext := range []string{".shp", ".shx"} {
		copyFile(t, six+ext, filepath.Join(dir, "parcels/half"+ext))
	}

	db := pgtest.NewDB(t)
	open := func() *consumerBundle {
		box, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 50 * time.Millisecond})
		require.NoError(t, err)
		b := newConsumer(t, db, box, "admin/=admin_units", "=parcels")
		b.cons.Objects = localfs.Inbox{Dir: box.Dir()}
		return b
	}
	b := open()
	b.run(t, 60*time.Second)
	m := b.metrics
	require.EqualValues(t, 3, testutil.ToFloat64(m.WriteGate.WithLabelValues("written")), b.logs.String())
	require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE target_table = 'admin_units'`))
	require.EqualValues(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE target_table = 'parcels'`))
	require.EqualValues(t, 4, testutil.ToFloat64(m.EventsFiltered.WithLabelValues("sidecar")), "six's .shx .dbf .prj, half's .shx")
	require.EqualValues(t, 1, testutil.ToFloat64(m.DeadLettered))
	reason, err := os.ReadFile(filepath.Join(dir, ".dead-letter", "parcels", "half.shp.reason"))
	require.NoError(t, err)
	require.Contains(t, string(reason), "incomplete file set")
	require.Contains(t, string(reason), "has no .dbf beside it (gave up waiting)")

	// The same files delivered again (another consumer on the directory;
	// the dead letter stays out of it).
	b2 := open()
	b2.run(t, 60*time.Second)
	require.EqualValues(t, 0, testutil.ToFloat64(b2.metrics.WriteGate.WithLabelValues("written")))
	require.EqualValues(t, 3, testutil.ToFloat64(b2.metrics.Claims.WithLabelValues("duplicate")))
	require.EqualValues(t, 0, testutil.ToFloat64(b2.metrics.Downloads), "a duplicate is stopped before any copy")
	require.EqualValues(t, 3, b.count(t, `SELECT count(*) FROM jobs`))
}

// s3Record is an object's S3 event record in AWS's format.
func s3Record(ev ingest.Event, seq int) map[string]any {
	return map[string]any{
		"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
		"eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "eventName": "ObjectCreated:Put",
		"s3": map[string]any{
			"s3SchemaVersion": "1.0",
			"bucket":          map[string]any{"name": ev.Bucket},
			"object": map[string]any{"key": url.QueryEscape(ev.Key), "size": ev.Size, "eTag": ev.ETag,
				"versionId": ev.VersionID, "sequencer": fmt.Sprintf("0065F1A2B3C4D5E6%02X", seq)},
		},
	}
}

// TestConsumerSQS: the consumer on the SQS driver (fauxqs), S3 (gofakes3)
// and the store. Each notification is delivered twice: every object is
// written once and its copy is a duplicate; an object that is not GeoJSON
// and a message that is not an event are dead-lettered with their
// reasons, the object's job recorded FAILED; a test event is filtered.
func TestConsumerSQS(t *testing.T) {
	sq := testsrv.SQS(t)
	s3srv := testsrv.S3(t)
	s3srv.NewBucket(t, "uploads", true)
	qURL := sq.NewQueue(t, "consumer", 5*time.Second)
	dlq := sq.NewQueue(t, "consumer-dlq", 5*time.Second)
	recv := sqsqueue.New(sq.Client, qURL, sqsqueue.Options{Wait: time.Second, Visibility: 5 * time.Second, DeadLetterURL: dlq})
	b := newConsumer(t, pgtest.NewDB(t), recv, "parcels/=parcels", "admin/=admin_units")
	b.cons.Objects = ingests3.Objects{Client: s3srv.Client}
	// A copy that finds its job's claim held (both copies in one batch)
	// comes back once that lease has ended.
	b.cons.Service.Lease = 3 * time.Second
	b.cons.Visibility = 5 * time.Second

	read := func(p string) []byte {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		return body
	}
	parcels := put(t, s3srv.Client, "uploads", "parcels/montreal landuse.geojson", read("../../testdata/corpus/montreal_landuse_overpass/export.geojson"))
	admin := put(t, s3srv.Client, "uploads", "admin/admin.geojson", read("../../testdata/synthetic/admin.geojson"))
	bad := put(t, s3srv.Client, "uploads", "parcels/bad.geojson", []byte("this is not GeoJSON"))
	send := func(body string) {
		_, err := sq.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &qURL, MessageBody: &body})
		require.NoError(t, err)
	}
	notify := func(recs ...map[string]any) string {
		body, err := json.Marshal(map[string]any{"Records": recs})
		require.NoError(t, err)
		return string(body)
	}
	for range 2 {
		send(notify(s3Record(parcels, 1), s3Record(admin, 2)))
		send(notify(s3Record(bad, 3)))
	}
	send(`{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"uploads"}`)
	send(`not an event`)

	b.run(t, 90*time.Second)
	m := b.metrics
	require.EqualValues(t, 2, testutil.ToFloat64(m.WriteGate.WithLabelValues("written")), b.logs.String())
	// A message whose copy found one of its jobs held comes back whole:
	// its other job is then a duplicate once more.
	require.GreaterOrEqual(t, testutil.ToFloat64(m.Claims.WithLabelValues("duplicate"))+
		testutil.ToFloat64(m.WriteGate.WithLabelValues("already_present")), 2.0, "each object's copy is a duplicate:\n%s", b.logs.String())
	require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE target_table = 'admin_units'`))
	require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE target_table = 'parcels'`))
	require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM claims WHERE state = 'FAILED'`))
	require.EqualValues(t, 3, testutil.ToFloat64(m.DeadLettered), "the bad object twice, the unreadable message")

	var reasons []string
	deadline := time.Now().Add(20 * time.Second)
	for len(reasons) < 3 && time.Now().Before(deadline) {
		out, err := sq.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &dlq,
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		for _, msg := range out.Messages {
			reasons = append(reasons, aws.ToString(msg.MessageAttributes[queue.ReasonAttribute].StringValue))
		}
	}
	require.Len(t, reasons, 3)
	joined := strings.Join(reasons, "\n")
	require.Equal(t, 2, strings.Count(joined, "s3://uploads/parcels/bad.geojson (job "), joined)
	require.Contains(t, joined, "unsupported format")
	require.Contains(t, joined, "not a JSON object")

	// The queue is empty: every message was acked or dead-lettered.
	out, err := sq.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &qURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, out.Messages)
}
