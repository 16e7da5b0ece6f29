package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/ingest"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/internal/testsupport/vgwnotify"
	"github.com/stretchr/testify/require"
)

// vgwBridge stands in for S3's delivery of notifications to SQS: versitygw
// POSTs every bucket notification to the bridge's URL, and the bridge sends
// it to an SQS queue, copies times on arrival. It records what it sent so
// that a test can deliver the notifications again later.
type vgwBridge struct {
	t        *testing.T
	sqs      *sqs.Client
	queueURL string
	copies   int
	url      string

	mu   sync.Mutex
	raw  []string // the bodies as versitygw POSTed them
	sent []string // the bodies as sent to SQS
}

func newVgwBridge(t *testing.T, c *sqs.Client, queueURL string, copies int) *vgwBridge {
	b := &vgwBridge{t: t, sqs: c, queueURL: queueURL, copies: copies}
	ts := httptest.NewServer(http.HandlerFunc(b.serveHTTP))
	t.Cleanup(ts.Close)
	b.url = ts.URL + "/events"
	return b
}

func (b *vgwBridge) serveHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		b.t.Errorf("bridge: read versitygw's POST: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := vgwnotify.AWSKeys(raw)
	if err != nil {
		b.t.Errorf("bridge: versitygw POSTed %s: %v", raw, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for i := 0; i < b.copies; i++ {
		if err := b.send(r.Context(), body); err != nil {
			b.t.Errorf("bridge: send to SQS: %v", err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	b.mu.Lock()
	b.raw = append(b.raw, string(raw))
	b.sent = append(b.sent, body)
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (b *vgwBridge) send(ctx context.Context, body string) error {
	_, err := b.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &b.queueURL, MessageBody: &body})
	return err
}

// received returns what versitygw POSTed so far, and the bodies sent for it.
func (b *vgwBridge) received() (raw, sent []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.raw...), append([]string(nil), b.sent...)
}

// find returns the body sent to SQS for the notification about key with
// the given ETag, and the raw body versitygw POSTed.
func (b *vgwBridge) find(t *testing.T, key, etag string) (sent, raw string) {
	t.Helper()
	raws, sents := b.received()
	for i, body := range sents {
		evs, err := ingests3.ParseEvents([]byte(body))
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Key == key && ev.ETag == etag {
				return body, raws[i]
			}
		}
	}
	t.Fatalf("no notification for %s with ETag %s among %d", key, etag, len(sents))
	return "", ""
}

// sqsDepth is how many messages the queue holds, visible, in flight or
// delayed.
func sqsDepth(t *testing.T, c *sqs.Client, queueURL string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &queueURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	require.NoError(t, err)
	n := 0
	for _, v := range out.Attributes {
		i, err := strconv.Atoi(v)
		require.NoError(t, err)
		n += i
	}
	return n
}

// TestServeVersitygwEndToEnd: the same exactly-once run as
// TestServeSQSEndToEnd, but the objects are in a real S3 server,
// versitygw (out of process, versioned bucket), and the notifications are
// the ones versitygw itself sends for the uploads, through a webhook bridge
// to fauxqs: every notification is delivered twice before serve starts and
// a third time after the first two copies were settled. serve with 4
// workers writes each object's features exactly once, counts every
// duplicate at a gate, and dead-letters the unparseable object with its
// reason. Then a second version of one object replaces the first, and a
// late copy of the first version's notification changes nothing.
func TestServeVersitygwEndToEnd(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	qURL := sq.NewQueue(t, "vgw-events", 30*time.Second)
	dlqURL := sq.NewQueue(t, "vgw-events-dlq", 30*time.Second)
	br := newVgwBridge(t, sq.Client, qURL, 2)
	st := testsrv.Versitygw(t, br.url) // POSTs its s3:TestEvent to the bridge while starting
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "uploads"
	st.NewBucket(t, bucket, true)

	six := "../../testdata/corpus/six_counties/six_counties"
	a := upload(t, st.Client, bucket, "parcels/city a+b.geojson", "../../testdata/corpus/montreal_landuse_overpass/export.geojson", 0)
	upload(t, st.Client, bucket, "admin/admin.geojson", "../../testdata/synthetic/admin.geojson", 0)
	for _, ext := range []string{".shx", ".dbf", ".prj", ".shp"} {
		upload(t, st.Client, bucket, "parcels/six"+ext, six+ext, 0)
	}
	upload(t, st.Client, bucket, "parcels/bad.geojson", "literal:this is not GeoJSON at all", 0)
	require.NotEmpty(t, a.versionID, "the bucket is versioned")

	// versitygw sends its notifications asynchronously after each PUT.
	const goodJobs, eventsPerRound = 3, 8 // a, admin, shp; 7 uploads and the test event
	eventually(t, 2*time.Minute, "versitygw's notifications", func() bool {
		raw, _ := br.received()
		return len(raw) >= eventsPerRound
	})
	sentA, rawA := br.find(t, a.key, a.etag)
	t.Logf("versitygw's notification, as POSTed: %s", rawA)
	t.Logf("as sent to SQS: %s", sentA)
	evA, err := ingests3.ParseEvents([]byte(sentA))
	require.NoError(t, err)
	require.Len(t, evA, 1)
	t.Logf("versitygw's event: name %q, time %s, size %d, eTag %q, versionId %q, sequencer %q (the PUT returned version %s)",
		evA[0].Name, evA[0].Time.Format(time.RFC3339Nano), evA[0].Size, evA[0].ETag, evA[0].VersionID, evA[0].Sequencer, a.versionID)
	require.NotEmpty(t, evA[0].Sequencer, "versitygw's events carry a sequencer")
	require.Equal(t, a.size, evA[0].Size)

	srv := startServe(t, awsEnv, "--queue-url", qURL, "--dlq-url", dlqURL, "--workers", "4", "--database-url", db,
		"--visibility", "6s", "--wait", "1s", "--backoff", "1s", "--max-receives", "3",
		// A copy that finds a claim held comes back when the lease ends; 10 s
		// outlasts a job on a loaded machine (at 3 s one lost its lease).
		"--lease", "10s",
		// The second version is another file altogether (the guards would
		// hold it as pending): this test is about its delivery.
		"--route", "parcels/=parcels?guards=off", "--route", "admin/=admin_units")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", srv.stderr.String())
		}
	})
	eventually(t, 2*time.Minute, "the first two copies of every notification, acked or dead-lettered", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*eventsPerRound &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") >= 1 &&
			queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) >= goodJobs &&
			sqsDepth(t, sq.Client, qURL) == 0
	})
	// The third copy of every notification, after the first two were settled.
	_, sent := br.received()
	require.Len(t, sent, eventsPerRound, "versitygw sent one notification per upload, and its test event")
	for _, body := range sent {
		require.NoError(t, br.send(context.Background(), body))
	}
	eventually(t, 2*time.Minute, "the third copies, acked or dead-lettered", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 3*eventsPerRound &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") >= 2 &&
			sqsDepth(t, sq.Client, qURL) == 0
	})
	// Every duplicate delivery was stopped by a gate and counted.
	written := srv.metric(t, `geoingest_write_gate_total{result="written"}`)
	lost := srv.metric(t, `geoingest_claims_total{result="duplicate"}`)
	held := srv.metric(t, `geoingest_claims_total{result="held"}`)
	present := srv.metric(t, `geoingest_write_gate_total{result="already_present"}`)
	dead := srv.metric(t, "geoingest_messages_dead_lettered_total")
	t.Logf("written %v, claim-gate duplicates %v, held elsewhere (given back) %v, write-gate already-present %v, filtered sidecar %v, test %v, dead-lettered %v",
		written, lost, held, present, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`),
		srv.metric(t, `geoingest_events_filtered_total{reason="test_event"}`), dead)
	// Each message given back for a held claim (one event each) came back once more.
	require.EqualValues(t, 3*eventsPerRound+held, srv.metric(t, "geoingest_events_received_total"))
	require.EqualValues(t, goodJobs, written)
	// The unparseable object's copies: each one that claims it fails it
	// and is dead-lettered; a copy that finds the claim held by a worker
	// still failing it is not a duplicate, comes back when the lease ends,
	// finds the claim FAILED, retries and is dead-lettered too.
	require.EqualValues(t, 3, dead)
	require.EqualValues(t, dead, srv.metric(t, `geoingest_jobs_failed_total{kind="permanent"}`), "every failed attempt was dead-lettered")
	require.EqualValues(t, 2*goodJobs, lost+present,
		"each of the 2 duplicate deliveries of each object is stopped at the claim gate or at the write gate")
	require.EqualValues(t, 3*3, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`), ".shx, .dbf, .prj, 3 times each")
	require.EqualValues(t, 3, srv.metric(t, `geoingest_events_filtered_total{reason="test_event"}`))

	// Exactly one committed job per object, each with its features once.
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM (SELECT job_ref FROM parcels GROUP BY job_ref, feature_index HAVING count(*) > 1) d`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM (SELECT job_ref FROM admin_units GROUP BY job_ref, feature_index HAVING count(*) > 1) d`))
	require.EqualValues(t, 0, queryInt(t, db, `
		SELECT count(*) FROM jobs j WHERE j.feature_count <>
		  (SELECT count(*) FROM parcels p WHERE p.job_ref = j.job_ref) + (SELECT count(*) FROM admin_units u WHERE u.job_ref = j.job_ref)`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM jobs WHERE feature_count = 0`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE target_table = 'admin_units' AND source_key = 'admin/admin.geojson'`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = 'parcels/six.shp'`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = 'parcels/city a+b.geojson' AND version_token = $1`,
		evA[0].VersionToken()), "the key keeps its '+', and the job names the version the event names")
	// The unparseable object: FAILED with its reason.
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key = 'parcels/bad.geojson' AND last_error <> ''`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED'`))

	// Its dead-lettered deliveries are in the DLQ with the reason attribute.
	reasons := deadLetterReasons(t, sq.Client, dlqURL, int(dead), "bad.geojson")
	for _, r := range reasons {
		require.Contains(t, r, "s3://uploads/parcels/bad.geojson")
	}

	// A second version of the GeoJSON object. Its notification (two copies
	// from the bridge, a third after it was processed) replaces the first
	// version's generation; then the first version's notification arrives
	// once more, late, and changes nothing.
	a2 := upload(t, st.Client, bucket, a.key, "../../testdata/corpus/mixed_feature_geojson/mixed_feature.json", 0)
	require.NotEqual(t, a.versionID, a2.versionID)
	require.NotEqual(t, a.etag, a2.etag)
	eventually(t, 2*time.Minute, "the second version's notification", func() bool {
		raw, _ := br.received()
		return len(raw) >= eventsPerRound+1
	})
	sentA2, _ := br.find(t, a.key, a2.etag)
	evA2, err := ingests3.ParseEvents([]byte(sentA2))
	require.NoError(t, err)
	require.Equal(t, 1, ingest.CompareOrder(evA2[0].Order(), evA[0].Order()), "versitygw's sequencer orders the versions")
	eventually(t, 2*time.Minute, "the second version to become current", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current' AND version_token = $1`, evA2[0].VersionToken()) == 1 &&
			srv.metric(t, "geoingest_events_received_total") >= 3*eventsPerRound+2
	})
	require.NoError(t, br.send(context.Background(), sentA2)) // its third copy
	require.NoError(t, br.send(context.Background(), sentA))  // the first version, late
	eventually(t, 2*time.Minute, "the late copies, acked", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 3*eventsPerRound+4 && sqsDepth(t, sq.Client, qURL) == 0
	})
	require.EqualValues(t, goodJobs+1, srv.metric(t, `geoingest_write_gate_total{result="written"}`))
	require.EqualValues(t, lost+present+3, srv.metric(t, `geoingest_claims_total{result="duplicate"}`)+
		srv.metric(t, `geoingest_write_gate_total{result="already_present"}`), "2 copies of the second version, 1 of the first")
	require.EqualValues(t, dead, srv.metric(t, "geoingest_messages_dead_lettered_total"), "nothing more dead-lettered")
	srv.stop(t)

	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = $1`, a.key))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = $1 AND status = 'current' AND version_token = $2`,
		a.key, evA2[0].VersionToken()), "the newest version is the only current generation")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = $1 AND status IN ('replaced', 'superseded') AND version_token = $2`,
		a.key, evA[0].VersionToken()), "the older one is replaced (or superseded)")
	require.EqualValues(t, 1, queryInt(t, db, `
		SELECT count(*) FROM sources s JOIN jobs j ON j.job_id = s.current_job_id
		 WHERE s.source_key = $1 AND j.version_token = $2`, a.key, evA2[0].VersionToken()))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(DISTINCT p.job_ref) FROM parcels p JOIN jobs j USING (job_ref) WHERE j.source_key = $1`, a.key),
		"only one generation of the key holds features")
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": db}, "verify")
	require.Equal(t, 0, code, out+errOut)

	// The source queue is empty: nothing left, nothing lost.
	rcv, err := sq.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &qURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, rcv.Messages)
	raw, _ := br.received()
	require.Len(t, raw, eventsPerRound+1, "versitygw sent nothing unexpected")
}
