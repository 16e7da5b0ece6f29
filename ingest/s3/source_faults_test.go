package s3_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// A download cut short (a reset, a truncated body) or stalled is a
// Transient failure that leaves no partial file behind, and the next
// attempt downloads the object whole. Each fault is injected by a proxy in
// front of the S3 server, after the answer's headers promised the whole
// length.
func TestS3FetchFaultsAreTransient(t *testing.T) {
	srv := testsrv.S3(t)
	srv.NewBucket(t, "faults", false)
	body := bytes.Repeat([]byte(`{"type":"Feature","geometry":null,"properties":{}}`+"\n"), 2000)
	ev := put(t, srv.Client, "faults", "parcels/big.geojsonl", body)
	p, err := faultproxy.New(srv.URL, faultproxy.Options{Protocol: faultproxy.S3})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	client := awss3.NewFromConfig(aws.Config{Region: testsrv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(testsrv.AccessKey, testsrv.SecretKey, ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 100 * time.Millisecond })
		}}, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	ctx := context.Background()
	const idle = 700 * time.Millisecond
	_, f, err := s3.NewSource(ctx, client, ev, s3.Options{IdleTimeout: idle})
	require.NoError(t, err)

	for _, kind := range []faultproxy.Kind{faultproxy.Reset, faultproxy.Truncate, faultproxy.Stall} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			p.Arm("GetObject", kind)
			start := time.Now()
			_, err := f.Fetch(ctx, dir)
			require.Error(t, err)
			require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
			if kind == faultproxy.Stall {
				require.Contains(t, err.Error(), "download timeout")
				require.GreaterOrEqual(t, time.Since(start), idle)
			} else {
				require.Contains(t, err.Error(), "short of its length")
			}
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "the partial download is removed")

			got, err := f.Fetch(ctx, dir)
			require.NoError(t, err, "the retry")
			require.Equal(t, sha(body), got.ContentHash)
			require.Equal(t, int64(len(body)), got.Size)
		})
	}
	// The SDK's own retries absorb 500s and SlowDowns before any byte.
	p.Arm("GetObject", faultproxy.SlowDown)
	p.Arm("GetObject", faultproxy.Error500)
	got, err := f.Fetch(ctx, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, sha(body), got.ContentHash)
	require.Equal(t, map[faultproxy.Kind]int{faultproxy.Reset: 1, faultproxy.Truncate: 1, faultproxy.Stall: 1,
		faultproxy.SlowDown: 1, faultproxy.Error500: 1}, p.KindCounts())
}

// The download timeout is on idleness, not on the whole download: a slow
// object that keeps sending bytes takes longer than the timeout and is
// whole.
func TestS3FetchSlowIsNotStalled(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("ETag", `"abc"`)
		w.WriteHeader(http.StatusOK)
		for i := 0; i < 10; i++ {
			_, _ = w.Write(body[i*100 : (i+1)*100])
			http.NewResponseController(w).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	}))
	t.Cleanup(ts.Close)
	client := awss3.NewFromConfig(aws.Config{Region: testsrv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(testsrv.AccessKey, testsrv.SecretKey, "")}, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(ts.URL)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: "slow", Key: "parcels/slow.geojson", ETag: "abc", Size: int64(len(body))}
	_, f, err := s3.NewSource(context.Background(), client, ev, s3.Options{IdleTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	got, err := f.Fetch(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.Greater(t, time.Since(start), time.Second, "the download took longer than the idle timeout")
	require.Equal(t, sha(body), got.ContentHash)
}
