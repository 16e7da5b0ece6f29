package s3_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestObjectSourceConformance runs the ObjectSource suite against both S3
// servers of the tests (gofakes3 in-process, versitygw), with versioned
// and unversioned buckets.
func TestObjectSourceConformance(t *testing.T) {
	servers := map[string]func(t *testing.T) *testsrv.S3Server{
		"gofakes3": func(t *testing.T) *testsrv.S3Server { return testsrv.S3(t) },
		"versitygw": func(t *testing.T) *testsrv.S3Server {
			hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			t.Cleanup(hook.Close)
			return testsrv.Versitygw(t, hook.URL)
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			var buckets atomic.Int64
			for _, versioned := range []bool{false, true} {
				t.Run(fmt.Sprintf("versioned=%v", versioned), func(t *testing.T) {
					ingesttest.ObjectSourceSuite(t, ingesttest.ObjectHarness{
						Open: func(t *testing.T) (ingest.ObjectSource, string) {
							bucket := fmt.Sprintf("conformance-%d", buckets.Add(1))
							srv.NewBucket(t, bucket, versioned)
							return s3.Objects{Client: srv.Client}, bucket
						},
						Put: func(t *testing.T, bucket, key string, body []byte) ingest.Event {
							ev := put(t, srv.Client, bucket, key, body)
							ev.RawKey = url.QueryEscape(key)
							return ev
						},
						Message:   s3Message,
						Versioned: versioned,
					})
				})
			}
		})
	}
}

// s3Message is evs as S3 notifies them: one record each, keys URL-encoded
// with '+' for space.
func s3Message(t *testing.T, evs ...ingest.Event) []byte {
	var recs []map[string]any
	for i, ev := range evs {
		recs = append(recs, map[string]any{
			"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
			"eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "eventName": "ObjectCreated:Put",
			"s3": map[string]any{"s3SchemaVersion": "1.0", "bucket": map[string]any{"name": ev.Bucket},
				"object": map[string]any{"key": url.QueryEscape(ev.Key), "size": ev.Size, "eTag": ev.ETag,
					"versionId": ev.VersionID, "sequencer": fmt.Sprintf("0065F1A2B3C4D5E6%02X", i)}},
		})
	}
	b, err := json.Marshal(map[string]any{"Records": recs})
	require.NoError(t, err)
	return b
}
