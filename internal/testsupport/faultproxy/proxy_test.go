package faultproxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsrv.Stop()
	os.Exit(code)
}

func awsCfg(attempts int) aws.Config {
	return aws.Config{Region: testsrv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(testsrv.AccessKey, testsrv.SecretKey, ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })
		}}
}

// s3Setup is an in-process S3 server holding one object, a proxy in front
// of it, and a client through the proxy that makes attempts attempts.
func s3Setup(t *testing.T, attempts int, opts faultproxy.Options) (*faultproxy.Proxy, *s3.Client, []byte) {
	t.Helper()
	srv := testsrv.S3(t)
	srv.NewBucket(t, "bkt", false)
	body := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	_, err := srv.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k/obj"), Body: bytes.NewReader(body)})
	require.NoError(t, err)
	opts.Protocol = faultproxy.S3
	p, err := faultproxy.New(srv.URL, opts)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	c := s3.NewFromConfig(awsCfg(attempts), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return p, c, body
}

func getObject(ctx context.Context, c *s3.Client) (*s3.GetObjectOutput, error) {
	return c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k/obj")})
}

func apiCode(t *testing.T, err error) string {
	t.Helper()
	var ae smithy.APIError
	require.True(t, errors.As(err, &ae), "not an API error: %v", err)
	return ae.ErrorCode()
}

// A 500 and a 503 SlowDown come back as the S3 errors the SDK knows, and
// the SDK counts them retryable (the SlowDown a throttle); with retries
// left, the SDK's retry gets the object.
func TestS3ErrorAnswers(t *testing.T) {
	p, c, body := s3Setup(t, 1, faultproxy.Options{})
	ctx := context.Background()

	p.Arm("GetObject", faultproxy.Error500)
	_, err := getObject(ctx, c)
	require.Error(t, err)
	require.Equal(t, "InternalError", apiCode(t, err))
	require.Equal(t, aws.TrueTernary, retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err))

	p.Arm("GetObject", faultproxy.SlowDown)
	_, err = getObject(ctx, c)
	require.Error(t, err)
	require.Equal(t, "SlowDown", apiCode(t, err))
	require.Equal(t, aws.TrueTernary, retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err))

	p.Arm("HeadObject", faultproxy.SlowDown) // a HEAD error has no body: still a 503
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k/obj")})
	require.Error(t, err)
	require.Contains(t, err.Error(), "503")

	// Nothing armed: the request goes through.
	out, err := getObject(ctx, c)
	require.NoError(t, err)
	got, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	require.Equal(t, body, got)

	require.Equal(t, map[string]int{"500 GetObject": 1, "slowdown GetObject": 1, "slowdown HeadObject": 1}, p.Counts())

	// The SDK's own retries get past one fault.
	c3 := retrying(p)
	p.Arm("GetObject", faultproxy.SlowDown)
	out, err = getObject(ctx, c3)
	require.NoError(t, err)
	got, err = io.ReadAll(out.Body)
	require.NoError(t, err)
	require.Equal(t, body, got)
	require.Equal(t, 2, p.Counts()["slowdown GetObject"])
}

func retrying(p *faultproxy.Proxy) *s3.Client {
	return s3.NewFromConfig(awsCfg(3), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// A reset, a truncated body and a stall each promise the whole length and
// deliver half of it: a reset and a truncation end the read with an error
// (not a short clean EOF), a stall blocks it until the client gives up.
func TestS3BodyFaults(t *testing.T) {
	p, c, body := s3Setup(t, 1, faultproxy.Options{})
	ctx := context.Background()

	p.Arm("GetObject", faultproxy.Reset)
	out, err := getObject(ctx, c)
	require.NoError(t, err)
	require.Equal(t, int64(len(body)), aws.ToInt64(out.ContentLength))
	got, err := io.ReadAll(out.Body)
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
	require.Less(t, len(got), len(body))

	p.Arm("GetObject", faultproxy.Truncate)
	out, err = getObject(ctx, c)
	require.NoError(t, err)
	require.Equal(t, int64(len(body)), aws.ToInt64(out.ContentLength))
	got, err = io.ReadAll(out.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, len(body)/2, len(got))
	require.Equal(t, body[:len(got)], got)

	p.Arm("GetObject", faultproxy.Stall)
	sctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err = getObject(sctx, c)
	require.NoError(t, err)
	got, err = io.ReadAll(out.Body)
	require.Error(t, err)
	require.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond, "the stalled read returned early")
	require.Equal(t, len(body)/2, len(got))

	require.Equal(t, map[faultproxy.Kind]int{faultproxy.Reset: 1, faultproxy.Truncate: 1, faultproxy.Stall: 1}, p.KindCounts())

	// The next download is whole.
	out, err = getObject(ctx, c)
	require.NoError(t, err)
	got, err = io.ReadAll(out.Body)
	require.NoError(t, err)
	require.Equal(t, body, got)
}

// A latency spike delays the answer, which is then whole.
func TestLatency(t *testing.T) {
	p, c, body := s3Setup(t, 1, faultproxy.Options{Latency: 400 * time.Millisecond})
	p.Arm("GetObject", faultproxy.Latency)
	start := time.Now()
	out, err := getObject(context.Background(), c)
	require.NoError(t, err)
	got, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	require.Equal(t, body, got)
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
	start = time.Now()
	_, err = getObject(context.Background(), c)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 300*time.Millisecond, "an unfaulted request was delayed")
}

// Rules fire on their operation only, with their probability, and a burst
// repeats the fault on the next requests of the operation.
func TestRules(t *testing.T) {
	p, c, _ := s3Setup(t, 1, faultproxy.Options{Seed: 42})
	ctx := context.Background()
	p.SetRules(faultproxy.Rule{Op: "HeadObject", Kind: faultproxy.Error500, P: 1})
	for i := 0; i < 3; i++ {
		_, err := getObject(ctx, c)
		require.NoError(t, err, "GetObject is not HeadObject")
	}
	_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k/obj")})
	require.Error(t, err)

	p.SetRules(faultproxy.Rule{Op: "GetObject", Kind: faultproxy.SlowDown, P: 1, Burst: 3})
	_, err = getObject(ctx, c)
	require.Error(t, err)
	p.SetRules() // the burst goes on without the rule
	for i := 0; i < 2; i++ {
		_, err = getObject(ctx, c)
		require.Error(t, err, "request %d of the burst", i+2)
	}
	_, err = getObject(ctx, c)
	require.NoError(t, err, "after the burst")

	p.SetRules(faultproxy.Rule{Op: "GetObject", Kind: faultproxy.Error500, P: 0.3})
	failed := 0
	for i := 0; i < 100; i++ {
		if _, err := getObject(ctx, c); err != nil {
			failed++
		}
	}
	require.InDelta(t, 30, failed, 15, "failures at P=0.3")
	require.Equal(t, failed, p.Counts()["500 GetObject"])
}

// An outage refuses connections, and cuts open ones, for its length; then
// the proxy serves again on the same address.
func TestOutage(t *testing.T) {
	p, c, _ := s3Setup(t, 1, faultproxy.Options{})
	ctx := context.Background()
	_, err := getObject(ctx, c)
	require.NoError(t, err)
	p.Arm("GetObject", faultproxy.Stall)
	out, err := getObject(ctx, c)
	require.NoError(t, err)
	readErr := make(chan error, 1)
	go func() { _, err := io.ReadAll(out.Body); readErr <- err }()
	time.Sleep(100 * time.Millisecond)

	require.NoError(t, p.Down(time.Second))
	require.True(t, p.IsDown())
	select {
	case err := <-readErr:
		require.Error(t, err, "the stalled download ends when the server goes")
	case <-time.After(5 * time.Second):
		t.Fatal("a connection open at the outage was not cut")
	}
	_, err = getObject(ctx, c)
	require.Error(t, err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	p.Wait()
	require.False(t, p.IsDown())
	_, err = getObject(ctx, c)
	require.NoError(t, err)
	require.Equal(t, 1, p.Outages())
}

// SQS (fauxqs, the JSON protocol of aws-sdk-go-v2): faults hit the action
// named in X-Amz-Target only; a failed DeleteMessage leaves the message in
// the queue, a failed ChangeMessageVisibility is a throttle the SDK
// retries, and a reset after DeleteMessage leaves the client not knowing
// that the message was deleted.
func TestSQSActions(t *testing.T) {
	srv := testsrv.SQS(t)
	qURL := srv.NewQueue(t, "faultproxy", 30*time.Second)
	p, err := faultproxy.New(srv.URL, faultproxy.Options{Protocol: faultproxy.SQS})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	c := sqs.NewFromConfig(awsCfg(1), func(o *sqs.Options) { o.BaseEndpoint = aws.String(p.URL()) })
	ctx := context.Background()
	p.SetRules(faultproxy.Rule{Op: "DeleteMessage", Kind: faultproxy.Error500, P: 1},
		faultproxy.Rule{Op: "ChangeMessageVisibility", Kind: faultproxy.SlowDown, P: 1})

	_, err = srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &qURL, MessageBody: aws.String("m")})
	require.NoError(t, err)
	recv, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &qURL, WaitTimeSeconds: 1})
	require.NoError(t, err, "ReceiveMessage is not faulted")
	require.Len(t, recv.Messages, 1)
	h := recv.Messages[0].ReceiptHandle

	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &qURL, ReceiptHandle: h})
	require.Error(t, err)
	require.Equal(t, "InternalError", apiCode(t, err))
	require.Equal(t, aws.TrueTernary, retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err))
	require.Equal(t, 1, depth(t, srv.Client, qURL), "the failed delete deleted the message")

	_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &qURL, ReceiptHandle: h, VisibilityTimeout: 0})
	require.Error(t, err)
	require.Equal(t, "RequestThrottled", apiCode(t, err))
	require.Equal(t, aws.TrueTernary, retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err))

	p.SetRules()
	p.Arm("DeleteMessage", faultproxy.Reset)
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &qURL, ReceiptHandle: h})
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset"), "%v", err)
	require.Equal(t, 0, depth(t, srv.Client, qURL), "the delete was done upstream")
	require.Equal(t, map[string]int{"500 DeleteMessage": 1, "slowdown ChangeMessageVisibility": 1, "reset DeleteMessage": 1}, p.Counts())
}

func depth(t *testing.T, c *sqs.Client, qURL string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &qURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(t, err)
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// The query protocol names its SQS action in the Action form field, not in
// X-Amz-Target: a rule on DeleteMessage hits it there too, and nothing
// else.
func TestSQSQueryProtocolAction(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<ok/>")
	}))
	t.Cleanup(upstream.Close)
	p, err := faultproxy.New(upstream.URL, faultproxy.Options{Protocol: faultproxy.SQS})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	p.SetRules(faultproxy.Rule{Op: "DeleteMessage", Kind: faultproxy.Error500, P: 1})
	post := func(action string) *http.Response {
		resp, err := http.PostForm(p.URL()+"/000000000000/q", url.Values{"Action": {action}, "ReceiptHandle": {"h"}})
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusInternalServerError, post("DeleteMessage").StatusCode)
	require.Equal(t, http.StatusOK, post("ReceiveMessage").StatusCode)
	require.Equal(t, map[string]int{"500 DeleteMessage": 1}, p.Counts())
}
