package gcs_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/gcs"
	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsrv.Stop()
	os.Exit(code)
}

// TestObjectSourceConformance runs the ObjectSource suite against
// fake-gcs-server, with and without object versioning.
func TestObjectSourceConformance(t *testing.T) {
	srv := testsrv.GCP(t)
	var buckets atomic.Int64
	for _, versioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("versioned=%v", versioned), func(t *testing.T) {
			ingesttest.ObjectSourceSuite(t, ingesttest.ObjectHarness{
				Open: func(t *testing.T) (ingest.ObjectSource, string) {
					bucket := fmt.Sprintf("conformance-%d", buckets.Add(1))
					srv.NewBucket(t, bucket, versioned, "")
					return gcs.Objects{Client: srv.Storage}, bucket
				},
				Put: func(t *testing.T, bucket, key string, body []byte) ingest.Event {
					return put(t, srv, bucket, key, body)
				},
				Message: func(t *testing.T, evs ...ingest.Event) []byte {
					require.Len(t, evs, 1)
					return notification(t, evs[0], gcs.ObjectFinalize, nil)
				},
				Versioned:          versioned,
				OneEventPerMessage: true,
			})
		})
	}
}

// put writes body to gs://bucket/key and returns its created event.
func put(t *testing.T, srv *testsrv.GCPServer, bucket, key string, body []byte) ingest.Event {
	t.Helper()
	w := srv.Storage.Bucket(bucket).Object(key).NewWriter(context.Background())
	_, err := w.Write(body)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return gcs.Created(w.Attrs())
}

// notification is the body queue/pubsub delivers for a Cloud Storage
// notification of ev (eventType typ), as Cloud Storage sends it.
func notification(t *testing.T, ev ingest.Event, typ string, extra map[string]string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"kind": "storage#object", "name": ev.Key, "bucket": ev.Bucket,
		"generation": ev.VersionID, "size": strconv.FormatInt(ev.Size, 10), "md5Hash": ev.ETag})
	require.NoError(t, err)
	attrs := map[string]string{"eventType": typ, "bucketId": ev.Bucket, "objectId": ev.Key,
		"objectGeneration": ev.VersionID, "payloadFormat": "JSON_API_V1", "eventTime": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range extra {
		attrs[k] = v
	}
	b, err := json.Marshal(map[string]any{"message": map[string]any{"attributes": attrs,
		"data": base64.StdEncoding.EncodeToString(data), "messageId": "1"}, "subscription": "projects/p/subscriptions/s"})
	require.NoError(t, err)
	return b
}
