package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/console"
	"github.com/stretchr/testify/require"
)

// knownSources is a change log that knows some sources, none of them with
// a record in the window asked for.
type knownSources map[string]bool

func (k knownSources) JobChanges(context.Context, string, bool) (ingest.Changes, []ingest.FeatureChange, error) {
	return ingest.Changes{}, nil, ingest.ErrNoChanges
}
func (k knownSources) SourceChanges(context.Context, string, string, time.Time) ([]ingest.Changes, error) {
	return nil, nil
}
func (k knownSources) ChangeFeed(context.Context, string, int) ([]ingest.Changes, error) {
	return nil, nil
}
func (k knownSources) ChangeFeedBehind(context.Context, string) (bool, error) { return false, nil }
func (k knownSources) SourceKnown(_ context.Context, bucket, key string) (bool, error) {
	return k[bucket+"/"+key], nil
}

// TestSourceChangesOfAnUnknownSource: /api/changes?source= for a source no
// job ever named (a mistyped URL) answers 404 naming it, as `geoingest
// changes SOURCE` exits 1; a known source with no record since the time
// asked for is an empty list.
func TestSourceChangesOfAnUnknownSource(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(console.New(console.Options{Changes: knownSources{"uploads/parcels/county.geojson": true}}))
	defer srv.Close()
	get := func(source string) (int, map[string]any) {
		resp, err := http.Get(srv.URL + "/api/changes?since=1h&source=" + url.QueryEscape(source))
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	code, body := get("s3://uploads/parcels/county.geojson")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []any{}, body["changes"])
	code, body = get("s3://uploads/parcels/countty.geojson")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body["error"], "s3://uploads/parcels/countty.geojson")
	// A gs:// source is named as asked for, not as an s3:// one.
	code, body = get("gs://uploads/parcels/countty.geojson")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body["error"], "source gs://uploads/parcels/countty.geojson:")
	// A path is not a source URL: the answer names every scheme it takes.
	code, body = get("/srv/uploads/county.geojson")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body["error"], "want s3://BUCKET/KEY, gs://BUCKET/KEY, azblob://CONTAINER/KEY or file:///PATH")
}
