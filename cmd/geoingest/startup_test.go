package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// exitWithin waits for the worker to exit on its own within d and returns
// its exit code and stderr.
func (w *worker) exitWithin(t *testing.T, d time.Duration) (int, string) {
	t.Helper()
	select {
	case <-w.exited:
	case <-time.After(d):
		t.Fatalf("serve still running after %s:\n%s", d, w.stderr.String())
	}
	return w.cmd.ProcessState.ExitCode(), w.stderr.String()
}

// TestServeStartUpRefusals: serve on a queue exits non-zero within
// seconds, saying what is missing and how to give it, when there are no
// credentials, when the queue or the dead-letter queue does not exist, and
// when a route's bucket does not exist; with everything there it starts.
func TestServeStartUpRefusals(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "startup")
	missing := c.queueURL + "-missing"
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"no credentials", []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}, nil,
			[]string{"no AWS credentials", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"}},
		{"no region", []string{"AWS_REGION=", "AWS_DEFAULT_REGION="}, nil, []string{"no AWS region", "AWS_REGION"}},
		{"unknown queue", nil, []string{"--queue-url", missing},
			[]string{"--queue-url " + missing + ": the queue does not exist", "GEOINGEST_QUEUE_URL"}},
		{"unknown dead-letter queue", nil, []string{"--dlq-url", missing},
			[]string{"--dlq-url " + missing + ": the queue does not exist", "GEOINGEST_DLQ_URL"}},
		{"unknown bucket", nil, []string{"--route", "nosuchbucket:parcels/=parcels"},
			[]string{"bucket nosuchbucket", "the bucket does not exist", "--route"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			w := c.serve(t, tc.env, append([]string{"--start-timeout", "60s"}, tc.args...)...)
			code, stderr := w.exitWithin(t, 15*time.Second)
			took := time.Since(start)
			require.NotEqual(t, 0, code, stderr)
			for _, s := range tc.want {
				require.Contains(t, stderr, s)
			}
			require.Less(t, took, 10*time.Second, "a refusal is not retried")
			t.Logf("%s: exit %d after %.2fs: %s", tc.name, code, took.Seconds(), lastLine(stderr))
		})
	}
	t.Run("all there", func(t *testing.T) {
		t.Parallel()
		addr := freeAddr(t)
		w := c.serve(t, nil, "--metrics-addr", addr, "--route", c.bucket+":parcels/=parcels")
		eventually(t, 30*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })
		w.stop(t)
	})
}

// TestServeStartUpWaitsThenGivesUp: a queue server that does not answer
// at start is retried until --start-timeout, then serve exits non-zero
// with the reason.
func TestServeStartUpWaitsThenGivesUp(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "startup-wait")
	proxy := newTCPProxy(t, c.sqs.URL)
	proxy.Cut()
	start := time.Now()
	w := c.serve(t, []string{"AWS_ENDPOINT_URL_SQS=" + proxy.URL}, "--start-timeout", "4s")
	code, stderr := w.exitWithin(t, 60*time.Second)
	took := time.Since(start)
	require.NotEqual(t, 0, code, stderr)
	require.Contains(t, stderr, "start-up check failed; retrying")
	require.Contains(t, stderr, "no answer within the start-up timeout of 4s")
	require.GreaterOrEqual(t, took, 4*time.Second)
	t.Logf("exit %d after %.1fs: %s", code, took.Seconds(), lastLine(stderr))
}

// TestServeReadyzQueueOutage: while the queue server is unreachable for
// longer than --unready-after, /readyz answers 503 with the reason; once
// it is back, receives succeed, /readyz answers 200 again and an upload
// sent during the outage lands.
func TestServeReadyzQueueOutage(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "readyz-queue")
	proxy := newTCPProxy(t, c.sqs.URL)
	addr := freeAddr(t)
	// A receive cut mid-answer may take the message with it: it comes back
	// after the visibility timeout.
	w := c.serve(t, []string{"AWS_ENDPOINT_URL_SQS=" + proxy.URL}, "--metrics-addr", addr, "--unready-after", "2s",
		"--visibility", "5s")
	eventually(t, 60*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })

	proxy.Cut()
	cutAt := time.Now()
	o := upload(t, c.s3.Client, c.bucket, "parcels/during.geojson", squaresFile(t, 5), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	var body string
	eventually(t, 30*time.Second, "/readyz to report the failing receives", func() bool {
		var code int
		code, body = readyzBody(addr)
		return code == http.StatusServiceUnavailable
	})
	notReady := time.Since(cutAt)
	require.Contains(t, body, "receiving from the queue has failed for")
	require.GreaterOrEqual(t, notReady, 2*time.Second, "not before --unready-after")
	time.Sleep(2 * time.Second)
	code, _ := readyzBody(addr)
	require.Equal(t, http.StatusServiceUnavailable, code, "still not ready while the queue is away")

	proxy.Restore()
	restoredAt := time.Now()
	eventually(t, 30*time.Second, "/readyz after the outage", func() bool { return readyz(addr) == http.StatusOK })
	ready := time.Since(restoredAt)
	eventually(t, 60*time.Second, "the upload sent during the outage committed", func() bool {
		return c.committed(t) && c.sqsEmpty(t)
	})
	t.Logf("/readyz 503 %.1fs after the cut (%q), 200 %.1fs after the queue came back",
		notReady.Seconds(), strings.TrimSpace(body), ready.Seconds())
	failures := metricOf(t, addr, "geoingest_receive_failures_total")
	require.Positive(t, failures)
	t.Logf("%v failed receives counted", failures)
	w.stop(t)
	stderr := w.stderr.String()
	require.Contains(t, stderr, "receiving again")
	// The failures are logged when they start and then every 30 s, not
	// once a second.
	require.LessOrEqual(t, strings.Count(stderr, "receive failed; retrying"), 2, stderr)
	c.committedOnce(t, 5)
}

// newTCPProxy is a cuttable TCP proxy (dbProxy) in front of the HTTP
// server at rawURL; its URL field is the proxy's http:// URL.
func newTCPProxy(t *testing.T, rawURL string) *dbProxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	p := &dbProxy{network: "tcp", addr: u.Host, conns: map[net.Conn]bool{}}
	p.ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.URL = fmt.Sprintf("http://%s", p.ln.Addr().String())
	go p.serve()
	t.Cleanup(func() { p.ln.Close(); p.Cut() })
	return p
}

// freeAddr is a free loopback address to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestServeStartUpLeastPrivilege: with credentials allowed only
// s3:GetObject on the routes' prefixes (versitygw with IAM and a bucket
// policy), HeadBucket is forbidden and serve starts all the same, saying
// at WARN what it could not tell; with a wrong secret it refuses.
func TestServeStartUpLeastPrivilege(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "startup-lp")
	vgw := testsrv.VersitygwIAM(t)
	ctx := context.Background()
	bucket := "uploads"
	_, err := vgw.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	require.NoError(t, err)
	vgw.CreateUser(t, "reader", "reader-secret")
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["reader"]},` +
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::uploads/parcels/*"]}]}`
	_, err = vgw.Client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &bucket, Policy: &policy})
	require.NoError(t, err)
	routes := []string{"--route", "uploads:parcels/=parcels", "--route", "uploads:admin/=admin_units"}
	env := func(secret string) []string {
		return []string{"AWS_ENDPOINT_URL_S3=" + vgw.URL, "AWS_ACCESS_KEY_ID=reader", "AWS_SECRET_ACCESS_KEY=" + secret}
	}

	addr := freeAddr(t)
	w := c.serve(t, env("reader-secret"), append([]string{"--metrics-addr", addr}, routes...)...)
	eventually(t, 30*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })
	w.stop(t)
	require.Contains(t, w.stderr.String(), "start-up check: cannot tell; going on")
	require.Contains(t, w.stderr.String(), "of route uploads:admin/")

	w = c.serve(t, env("wrong"), routes...)
	code, stderr := w.exitWithin(t, 15*time.Second)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "bucket uploads: the AWS credentials were refused")
	require.Contains(t, stderr, "SignatureDoesNotMatch")
}
