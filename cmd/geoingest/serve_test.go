package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// serving is a `geoingest serve` running in-process.
type serving struct {
	cancel  context.CancelFunc
	done    chan int
	stderr  *testfiles.SyncBuffer
	metrics string
}

// startServe runs Main with args in a goroutine; stop it with stop.
func startServe(t *testing.T, env map[string]string, args ...string) *serving {
	t.Helper()
	return startServeMain(t, NewMain(), env, args...)
}

// startServeMain is startServe with a Main the test prepared.
func startServeMain(t *testing.T, m *Main, env map[string]string, args ...string) *serving {
	t.Helper()
	return startServeMainCtx(t, context.Background(), m, env, args...)
}

// startServeMainCtx is startServeMain with ctx (and its test hooks) as the
// parent of serve's context.
func startServeMainCtx(t *testing.T, parent context.Context, m *Main, env map[string]string, args ...string) *serving {
	t.Helper()
	s := &serving{done: make(chan int, 1), stderr: &testfiles.SyncBuffer{}}
	ctx, cancel := context.WithCancel(parent)
	s.cancel = cancel
	m.Stdout, m.Stderr = &testfiles.SyncBuffer{}, s.stderr
	m.Getenv = func(k string) string { return env[k] }
	// Port 0: serve binds a port of the kernel's choice and logs it. A
	// port found free and closed again could be taken by another test's
	// server before serve binds it.
	go func() {
		s.done <- m.Run(ctx, append([]string{"serve", "--metrics-addr", "127.0.0.1:0", "--log-level", "info"}, args...))
	}()
	t.Cleanup(func() { s.stop(t) })
	// Ready once /readyz answers 200.
	addr := ""
	eventually(t, 2*time.Minute, "serve to become ready", func() bool {
		select {
		case code := <-s.done:
			s.done <- code
			t.Fatalf("serve exited with %d:\n%s", code, s.stderr.String())
		default:
		}
		if addr == "" {
			if addr = listenAddr(s.stderr.String()); addr == "" {
				return false
			}
			s.metrics = "http://" + addr + "/metrics"
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return s
}

// stop sends the equivalent of SIGTERM and waits for a clean exit.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case code := <-s.done:
		require.Equal(t, 0, code, s.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s:\n%s", s.stderr.String())
	}
}

// metric returns the value of the sample name{labels} ("" for none).
func (s *serving) metric(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := http.Get(s.metrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, sample+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(line[len(sample):]), 64)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

// listenAddr is the address serve's log says its HTTP server listens on
// ("" before it says so).
func listenAddr(log string) string {
	m := listenAddrRE.FindStringSubmatch(log)
	if m == nil {
		return ""
	}
	return m[1]
}

var listenAddrRE = regexp.MustCompile(`msg="serving /metrics[^"]*" addr=(\S+)`)

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func queryInt(t *testing.T, db, sql string, args ...any) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int64
	require.NoError(t, conn.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// object is an uploaded object and the S3 record that announces it.
type object struct {
	key, etag, versionID string
	size                 int64
	seq                  int
}

// record is the object's S3 event record in exactly AWS's format, with
// the key URL-encoded as S3 does ('+' for space).
func (o object) record(bucket string) map[string]any {
	return map[string]any{
		"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
		"eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "eventName": "ObjectCreated:Put",
		"userIdentity":      map[string]any{"principalId": "AWS:AIDAEXAMPLE"},
		"requestParameters": map[string]any{"sourceIPAddress": "127.0.0.1"},
		"responseElements":  map[string]any{"x-amz-request-id": "EXAMPLE123456789", "x-amz-id-2": "EXAMPLE/abc"},
		"s3": map[string]any{
			"s3SchemaVersion": "1.0", "configurationId": "geoingest",
			"bucket": map[string]any{"name": bucket, "ownerIdentity": map[string]any{"principalId": "EXAMPLE"}, "arn": "arn:aws:s3:::" + bucket},
			"object": map[string]any{"key": url.QueryEscape(o.key), "size": o.size, "eTag": o.etag,
				"versionId": o.versionID, "sequencer": fmt.Sprintf("0065F1A2B3C4D5E6%02X", o.seq)},
		},
	}
}

func notification(bucket string, objs ...object) string {
	var recs []map[string]any
	for _, o := range objs {
		recs = append(recs, o.record(bucket))
	}
	b, _ := json.Marshal(map[string]any{"Records": recs})
	return string(b)
}

func snsWrapped(msg string) string {
	b, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": "0b0b0b0b-1111-2222-3333-444444444444",
		"TopicArn": "arn:aws:sns:us-east-1:000000000000:uploads", "Subject": "Amazon S3 Notification", "Message": msg,
		"Timestamp": time.Now().UTC().Format(time.RFC3339), "SignatureVersion": "1", "Signature": "EXAMPLE"})
	return string(b)
}

func upload(t *testing.T, c *s3.Client, bucket, key, file string, seq int) object {
	t.Helper()
	var body []byte
	if strings.HasPrefix(file, "literal:") {
		body = []byte(strings.TrimPrefix(file, "literal:"))
	} else {
		var err error
		body, err = os.ReadFile(file)
		require.NoError(t, err)
	}
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
	require.NoError(t, err)
	return object{key: key, etag: strings.Trim(aws.ToString(out.ETag), `"`), versionID: aws.ToString(out.VersionId),
		size: int64(len(body)), seq: seq}
}

func sendBody(t *testing.T, c *sqs.Client, queueURL, body string) {
	t.Helper()
	_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: &body})
	require.NoError(t, err)
}

// TestServeSQSEndToEnd: objects in S3, their notifications (plain, with
// two records, SNS-wrapped, a test event and a sidecar) each delivered 3
// times, the third copy after the first was processed and acked; serve
// with 4 workers writes each object's features exactly once, counts the
// duplicates, and dead-letters the unparseable object with its reason and
// a FAILED job.
func TestServeSQSEndToEnd(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	st := testsrv.S3(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "uploads"
	st.NewBucket(t, bucket, true)
	qURL := sq.NewQueue(t, "events", 30*time.Second)
	dlqURL := sq.NewQueue(t, "events-dlq", 30*time.Second)

	six := "../../testdata/corpus/six_counties/six_counties"
	a := upload(t, st.Client, bucket, "parcels/city a.geojson", "../../testdata/corpus/montreal_landuse_overpass/export.geojson", 1)
	b := upload(t, st.Client, bucket, "parcels/b.json", "../../testdata/corpus/mixed_feature_geojson/mixed_feature.json", 2)
	adm := upload(t, st.Client, bucket, "admin/admin.geojson", "../../testdata/synthetic/admin.geojson", 3)
	shp := upload(t, st.Client, bucket, "parcels/six.shp", six+".shp", 4)
	dbf := upload(t, st.Client, bucket, "parcels/six.dbf", six+".dbf", 5)
	upload(t, st.Client, bucket, "parcels/six.shx", six+".shx", 6)
	upload(t, st.Client, bucket, "parcels/six.prj", six+".prj", 7)
	bad := upload(t, st.Client, bucket, "parcels/bad.geojson", "literal:this is not GeoJSON at all", 8)

	testEvent := `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-03-01T12:00:00.000Z","Bucket":"uploads","RequestId":"5582815E1AEA5ADF","HostId":"EXAMPLE"}`
	messages := []string{
		notification(bucket, a, b), // two records in one message
		snsWrapped(notification(bucket, adm)),
		notification(bucket, shp),
		notification(bucket, dbf), // a sidecar: filtered
		notification(bucket, bad),
		testEvent,
	}
	const goodJobs, eventsPerRound = 4, 7 // a, b, adm, shp; 7 events in the 6 messages
	for round := 0; round < 2; round++ {
		for _, m := range messages {
			sendBody(t, sq.Client, qURL, m)
		}
	}
	srv := startServe(t, awsEnv, "--queue-url", qURL, "--dlq-url", dlqURL, "--workers", "4", "--database-url", db,
		"--visibility", "6s", "--wait", "1s", "--backoff", "1s", "--max-receives", "3",
		// A copy that finds a claim held comes back when the lease ends; 10 s
		// outlasts a job on a loaded machine (at 3 s one lost its lease).
		"--lease", "10s")
	eventually(t, 2*time.Minute, "the first two rounds of events", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*eventsPerRound &&
			queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) >= goodJobs
	})
	// The third copy of every message, after the first was acked.
	for _, m := range messages {
		sendBody(t, sq.Client, qURL, m)
	}
	// Every object event of the three rounds (4 good objects and the bad
	// one, 3 times each) ends written, stopped by a gate, or dead-lettered.
	settled := func() (written, dupes, dead float64) {
		return srv.metric(t, `geoingest_write_gate_total{result="written"}`),
			srv.metric(t, `geoingest_claims_total{result="duplicate"}`) + srv.metric(t, `geoingest_write_gate_total{result="already_present"}`),
			srv.metric(t, "geoingest_messages_dead_lettered_total")
	}
	eventually(t, 2*time.Minute, "the third round", func() bool {
		w, d, dl := settled()
		return srv.metric(t, "geoingest_events_received_total") >= 3*eventsPerRound && w+d+dl >= 3*(goodJobs+1) &&
			sqsDepth(t, sq.Client, qURL) == 0 // messages given back for a held claim came back and settled
	})
	written, dupes, dead := settled()
	held := srv.metric(t, `geoingest_claims_total{result="held"}`)
	t.Logf("claims found held elsewhere, messages given back: %v", held)
	t.Logf("written %v, duplicates stopped at a gate %v, filtered sidecar %v, test %v, dead-lettered %v",
		written, dupes, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`),
		srv.metric(t, `geoingest_events_filtered_total{reason="test_event"}`), dead)
	require.EqualValues(t, goodJobs, written)
	// The bad object is dead-lettered by every delivery: one that claims
	// it fails it; a copy that arrives while another worker holds its
	// claim is not a duplicate, so it comes back when that lease ends,
	// finds the job FAILED, runs it again and fails it too.
	require.EqualValues(t, 3, dead)
	// Every other delivery is a duplicate of a committed job, stopped at a
	// gate; a give-back of the two-record message for one held record
	// delivers the other, done, record again: one more duplicate.
	require.GreaterOrEqual(t, dupes, float64(2*goodJobs))
	require.LessOrEqual(t, dupes, 2*goodJobs+held)
	require.EqualValues(t, 3, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`))
	require.EqualValues(t, 3, srv.metric(t, `geoingest_events_filtered_total{reason="test_event"}`))
	srv.stop(t)

	// Exactly one committed job per object, each with its features once.
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM (SELECT job_ref FROM parcels GROUP BY job_ref, feature_index HAVING count(*) > 1) d`))
	require.EqualValues(t, 0, queryInt(t, db, `
		SELECT count(*) FROM jobs j WHERE j.feature_count <>
		  (SELECT count(*) FROM parcels p WHERE p.job_ref = j.job_ref) + (SELECT count(*) FROM admin_units u WHERE u.job_ref = j.job_ref)`))
	require.Greater(t, queryInt(t, db, `SELECT count(*) FROM parcels`), int64(0))
	require.Greater(t, queryInt(t, db, `SELECT count(*) FROM admin_units`), int64(0))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = 'parcels/city a.geojson'`), "the '+' in the event key is a space")
	// The unparseable object: FAILED with its reason.
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key = 'parcels/bad.geojson' AND last_error <> ''`))

	// Its three deliveries are in the DLQ with the reason attribute.
	reasons := deadLetterReasons(t, sq.Client, dlqURL, int(dead), "bad.geojson")
	for _, r := range reasons {
		require.Contains(t, r, "s3://uploads/parcels/bad.geojson")
	}
	// The source queue is empty: nothing left, nothing lost.
	out, err := sq.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &qURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, out.Messages)
}

// TestServeSIGTERMLosesNothing: serve is stopped while a long job (10,000
// parcels) runs and its grace period is too short: the job is cancelled,
// nothing is committed, the message is given back at once, and the next
// serve commits it exactly once.
func TestServeSIGTERMLosesNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	st := testsrv.S3(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	st.NewBucket(t, "uploads", false)
	qURL := sq.NewQueue(t, "long", 30*time.Second)
	o := upload(t, st.Client, "uploads", "parcels/parcels_10k.geojson", "../../testdata/synthetic/parcels_10k.geojson", 1)
	sendBody(t, sq.Client, qURL, notification("uploads", o))
	args := []string{"--queue-url", qURL, "--workers", "1", "--database-url", db, "--wait", "1s", "--grace", "50ms"}

	// The first serve's job is held 2 s before its write gate, so that
	// however fast the machine it is still running when the stop comes.
	held := ingest.WithHook(context.Background(), func(point string, _ ingest.HookWhere) bool {
		if point == ingest.HookBeforeWrite {
			time.Sleep(2 * time.Second)
		}
		return false
	})
	srv := startServeMainCtx(t, held, NewMain(), awsEnv, args...)
	eventually(t, 20*time.Second, "the job to be claimed", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED'`) == 1
	})
	srv.stop(t) // SIGTERM
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM jobs`), "a cancelled job commits nothing")
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM parcels`), "a cancelled job commits nothing")
	require.Contains(t, srv.stderr.String(), "grace period over")
	require.Contains(t, srv.stderr.String(), "message given back for retry")

	// The second serve renews the visibility every 0.2 s while the job runs;
	// the job is held for 1 s before its write gate, so that it outlasts
	// the visibility timeout however fast the write path is.
	slow := ingest.WithHook(context.Background(), func(point string, _ ingest.HookWhere) bool {
		if point == ingest.HookBeforeWrite {
			time.Sleep(time.Second)
		}
		return false
	})
	srv2 := startServeMainCtx(t, slow, NewMain(), awsEnv, append(args, "--visibility", "600ms")...)
	eventually(t, 25*time.Second, "the job to be committed", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 1
	})
	time.Sleep(300 * time.Millisecond)
	ext := srv2.metric(t, "geoingest_visibility_extensions_total")
	t.Logf("visibility extensions: %v", ext)
	require.GreaterOrEqual(t, ext, 1.0, "a job longer than a third of the visibility timeout extends it")
	srv2.stop(t)
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 10000, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 10000, queryInt(t, db, `SELECT count(DISTINCT feature_index) FROM parcels`))
	out, err := sq.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &qURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, out.Messages, "the message was acked after the commit")
}

// TestServeInbox: files dropped into the inbox are ingested into the
// table their directory routes to; a restart rescans everything and
// re-ingests nothing (every file is a claim-gate duplicate).
func TestServeInbox(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	cp := func(src, dst string) {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		p := dir + "/" + dst
		require.NoError(t, os.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	cp("../../testdata/corpus/montreal_landuse_overpass/export.geojson", "montreal.geojson")
	cp("../../testdata/synthetic/admin.geojson", "admin/admin.geojson")
	args := []string{"--inbox", dir, "--workers", "4", "--database-url", db, "--poll", "100ms", "--settle", "300ms"}

	srv := startServe(t, nil, args...)
	eventually(t, 20*time.Second, "two files ingested", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 2
	})
	// Dropped while serving: a shapefile set, and a sidecar alone.
	six := "../../testdata/corpus/six_counties/six_counties"
	for _, ext := range []string{".dbf", ".shx", ".prj", ".shp"} {
		cp(six+ext, "parcels/six"+ext)
	}
	eventually(t, 20*time.Second, "the shapefile ingested", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 3
	})
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE target_table = 'admin_units'`))
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE target_table = 'parcels'`))
	require.EqualValues(t, 3, srv.metric(t, `geoingest_write_gate_total{result="written"}`))
	srv.stop(t)
	parcels := queryInt(t, db, `SELECT count(*) FROM parcels`)

	// Restart: every file is delivered again and stopped at the claim gate.
	srv2 := startServe(t, nil, args...)
	eventually(t, 20*time.Second, "the rescan", func() bool {
		return srv2.metric(t, `geoingest_claims_total{result="duplicate"}`) >= 3
	})
	time.Sleep(500 * time.Millisecond)
	require.EqualValues(t, 0, srv2.metric(t, `geoingest_write_gate_total{result="written"}`))
	require.EqualValues(t, 0, srv2.metric(t, "geoingest_downloads_total"), "a duplicate is stopped before any copy")
	require.EqualValues(t, 3, srv2.metric(t, `geoingest_claims_total{result="duplicate"}`))
	require.EqualValues(t, 3, srv2.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`))
	srv2.stop(t)
	require.EqualValues(t, 3, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, parcels, queryInt(t, db, `SELECT count(*) FROM parcels`))
}

// TestServeRouteOptions: a route's options are the parameters of its
// jobs: the same .prj-less shapefile is written under a route that gives
// its source SRID, and refused as unknown CRS under one that does not.
func TestServeRouteOptions(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	src := "../../testdata/corpus/blockgroups_noprj/blockgroups"
	for _, sub := range []string{"legacy", "other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		for _, ext := range []string{".dbf", ".shx", ".shp"} {
			b, err := os.ReadFile(src + ext)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, sub, "bg"+ext), b, 0o644))
		}
	}
	srv := startServe(t, nil, "--inbox", dir, "--workers", "2", "--database-url", db, "--poll", "100ms", "--settle", "300ms",
		"--route", "legacy/=parcels?source-srid=4326&encoding=cp1252", "--route", "=parcels")
	eventually(t, 20*time.Second, "both files dealt with", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE state IN ('COMMITTED', 'FAILED')`) == 2
	})
	srv.stop(t)
	require.EqualValues(t, 1, queryInt(t, db, `
		SELECT count(*) FROM jobs WHERE status = 'current' AND source_key LIKE '%/legacy/bg.shp'
		  AND feature_count = 663 AND params->>'source_srid' = '4326' AND encoding = 'windows-1252'`))
	require.EqualValues(t, 1, queryInt(t, db, `
		SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key LIKE '%/other/bg.shp' AND last_error LIKE '%unknown CRS%'`))
	require.EqualValues(t, 663, queryInt(t, db, `SELECT count(*) FROM parcels`))
}

// deadLetterReasons receives n messages from the dead-letter queue, checks
// that each body names bodyHas, and returns their reason attributes.
func deadLetterReasons(t *testing.T, c *sqs.Client, dlqURL string, n int, bodyHas string) []string {
	t.Helper()
	// Each dead letter is counted once by its id: a receive whose answer
	// was lost (a loaded machine) hides its messages for the queue's
	// visibility timeout (30 s), after which they come again, so the wait
	// outlasts it.
	byID := map[string]string{}
	eventually(t, 45*time.Second, "the dead letters", func() bool {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &dlqURL,
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		for _, m := range out.Messages {
			require.Contains(t, aws.ToString(m.Body), bodyHas)
			byID[aws.ToString(m.MessageId)] = aws.ToString(m.MessageAttributes[queue.ReasonAttribute].StringValue)
		}
		return len(byID) >= n
	})
	require.Len(t, byID, n)
	reasons := make([]string, 0, n)
	for _, r := range byID {
		reasons = append(reasons, r)
	}
	return reasons
}
