package gcs_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/gcs"
	"github.com/stretchr/testify/require"
)

// TestKeyVectors: a Cloud Storage notification of each gcs vector's object
// decodes into an event whose bucket, raw key and version token give the
// vector's job key by the reference formula.
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
		if !strings.HasPrefix(v.Name, "gcs ") {
			continue
		}
		n++
		evs, err := gcs.ParseEvents(notification(t, ingest.Event{Bucket: v.Bucket, Key: v.DecodedKey, VersionID: v.VersionToken, Size: 10},
			gcs.ObjectFinalize, nil))
		require.NoError(t, err)
		ev := evs[0]
		require.Equal(t, v.RawKey, ev.RawKey, v.Name)
		key, err := ingest.JobKey(ev.Bucket, ev.RawKey, ev.VersionToken(), v.Params)
		require.NoError(t, err)
		require.Equal(t, v.JobKey, key, v.Name)
	}
	require.Equal(t, 2, n, "the gcs vectors")
}
