package azblob_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/azblob"
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
// Azurite's Blob service (which keeps no versions: the ETag is the token).
func TestObjectSourceConformance(t *testing.T) {
	srv := testsrv.Azurite(t)
	ingesttest.ObjectSourceSuite(t, ingesttest.ObjectHarness{
		Open: func(t *testing.T) (ingest.ObjectSource, string) {
			return azblob.Objects{Client: srv.Blob}, srv.NewContainer(t, "conformance")
		},
		Put: func(t *testing.T, container, key string, body []byte) ingest.Event {
			return put(t, srv, container, key, body)
		},
		Message: func(t *testing.T, evs ...ingest.Event) []byte {
			require.Len(t, evs, 1)
			return gridMessage(t, evs[0], azblob.BlobCreated)
		},
		OneEventPerMessage: true,
	})
}

func put(t *testing.T, srv *testsrv.AzureServer, container, key string, body []byte) ingest.Event {
	t.Helper()
	resp, err := srv.Blob.UploadBuffer(context.Background(), container, key, body, nil)
	require.NoError(t, err)
	ev := ingest.Event{Name: "ObjectCreated:PutBlob", Bucket: container, Key: key, Size: int64(len(body)),
		ETag: strings.Trim(string(*resp.ETag), `"`), Store: ingest.StoreAzure, Time: time.Now().UTC()}
	if resp.VersionID != nil {
		ev.VersionID = *resp.VersionID
	}
	return ev
}

// gridMessage is ev as Event Grid puts it on a Storage Queue: one event in
// the Event Grid schema, base64-encoded.
func gridMessage(t *testing.T, ev ingest.Event, typ string) []byte {
	t.Helper()
	data := map[string]any{"api": "PutBlob", "eTag": ev.ETag, "contentLength": ev.Size, "blobType": "BlockBlob",
		"url": "https://acct.blob.core.windows.net/" + ev.Bucket + "/" + ev.Key, "sequencer": ev.Sequencer}
	if typ == azblob.BlobDeleted {
		data = map[string]any{"api": "DeleteBlob", "blobType": "BlockBlob", "sequencer": ev.Sequencer,
			"url": "https://acct.blob.core.windows.net/" + ev.Bucket + "/" + ev.Key}
	}
	if ev.VersionID != "" {
		data["versionId"] = ev.VersionID
	}
	b, err := json.Marshal(map[string]any{"topic": "/subscriptions/x/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct",
		"subject": azblob.Subject(ev.Bucket, ev.Key), "eventType": typ, "eventTime": time.Now().UTC().Format(time.RFC3339Nano),
		"id": "1", "data": data, "dataVersion": "", "metadataVersion": "1"})
	require.NoError(t, err)
	return []byte(base64Std(b))
}
