package azblob_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/azblob"
	"github.com/stretchr/testify/require"
)

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestEventNames: BlobCreated is a creation, BlobDeleted a removal, the
// subscription validation event a test event; the versionId is the token
// when there is one, else the ETag; the sequencer orders versions; plain
// JSON is read as well as base64; garbage is Permanent.
func TestEventNames(t *testing.T) {
	ev := ingest.Event{Bucket: "uploads", Key: "parcels/lot 7+%.geojson", Size: 10, ETag: "0x8DCF1E2A3B4C5D6",
		Sequencer: "0000000000000000000000000000A1B2000000000000c0de"}
	evs, err := azblob.ParseEvents(gridMessage(t, ev, azblob.BlobCreated))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	got := evs[0]
	require.True(t, got.Created())
	require.Equal(t, "uploads", got.Bucket)
	require.Equal(t, ev.Key, got.Key)
	require.Equal(t, ev.Key, ingest.UnquotePlus(got.RawKey))
	require.Equal(t, "0x8DCF1E2A3B4C5D6", got.VersionToken())
	ev.VersionID = "2024-12-05T17:00:00.1234567Z"
	evs, err = azblob.ParseEvents(gridMessage(t, ev, azblob.BlobCreated))
	require.NoError(t, err)
	require.Equal(t, ev.VersionID, evs[0].VersionToken(), "the versionId wins over the ETag")

	later := ev
	later.Sequencer = "0000000000000000000000000000A1B3000000000000c0de"
	del, err := azblob.ParseEvents(gridMessage(t, later, azblob.BlobDeleted))
	require.NoError(t, err)
	require.True(t, del[0].Removed())
	require.Equal(t, 1, ingest.CompareOrder(del[0].Order(), evs[0].Order()), "the sequencer orders the versions")

	plain, err := base64.StdEncoding.DecodeString(string(gridMessage(t, ev, azblob.BlobCreated)))
	require.NoError(t, err)
	arr := append(append([]byte("["), plain...), ']')
	evs, err = azblob.ParseEvents(arr)
	require.NoError(t, err)
	require.Len(t, evs, 1)

	val, err := azblob.ParseEvents([]byte(`{"eventType":"Microsoft.EventGrid.SubscriptionValidationEvent","subject":"","data":{"validationCode":"x"}}`))
	require.NoError(t, err)
	require.True(t, val[0].Test())

	for _, bad := range []string{"", "not json!", "[]", `{"eventType":"Microsoft.Storage.BlobCreated","subject":"/nope"}`,
		`{"eventType":"Other.Thing","subject":"/blobServices/default/containers/c/blobs/k"}`,
		`{"eventType":"Microsoft.Storage.BlobCreated","subject":"/blobServices/default/containers/c/blobs/k","data":{}}`} {
		_, err := azblob.ParseEvents([]byte(bad))
		require.Error(t, err, bad)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), bad)
	}
}

// TestKeyVectors: an Event Grid event for each azure vector's blob decodes
// into an event whose container, raw key and token give the vector's key.
func TestKeyVectors(t *testing.T) {
	data, err := os.ReadFile("../../testdata/jobkey_vectors.json")
	require.NoError(t, err)
	var vs []struct {
		Name         string         `json:"name"`
		Bucket       string         `json:"bucket"`
		RawKey       string         `json:"raw_key"`
		VersionToken string         `json:"version_token"`
		Params       map[string]any `json:"params"`
		DecodedKey   string         `json:"decoded_key"`
		JobKey       string         `json:"job_key"`
	}
	require.NoError(t, json.Unmarshal(data, &vs))
	n := 0
	for _, v := range vs {
		if !strings.HasPrefix(v.Name, "azure ") {
			continue
		}
		n++
		ev := ingest.Event{Bucket: v.Bucket, Key: v.DecodedKey, Size: 10, ETag: "0x8DC000000000001", Sequencer: "01"}
		if strings.HasPrefix(v.VersionToken, "0x") {
			ev.ETag = v.VersionToken
		} else {
			ev.VersionID = v.VersionToken
		}
		evs, err := azblob.ParseEvents(gridMessage(t, ev, azblob.BlobCreated))
		require.NoError(t, err)
		key, err := ingest.JobKey(evs[0].Bucket, evs[0].RawKey, evs[0].VersionToken(), v.Params)
		require.NoError(t, err)
		require.Equal(t, v.JobKey, key, v.Name)
	}
	require.Equal(t, 2, n, "the azure vectors")
}
