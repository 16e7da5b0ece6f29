package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWebhookSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"changes"}`)
	h := SignWebhook([]byte("k"), now, body)
	require.True(t, VerifyWebhook([]byte("k"), h, body, now, time.Minute))
	require.False(t, VerifyWebhook([]byte("other"), h, body, now, time.Minute), "another key")
	require.False(t, VerifyWebhook([]byte("k"), h, []byte(`{"event":"changez"}`), now, time.Minute), "another body")
	require.False(t, VerifyWebhook([]byte("k"), h, body, now.Add(time.Hour), time.Minute), "too old")
	require.False(t, VerifyWebhook([]byte("k"), "v1=00", body, now, 0))
}

func TestWebhookSelect(t *testing.T) {
	routes, err := ParseRoutes([]string{"b:county/=parcels?webhook=http%3A%2F%2F127.0.0.1%3A9%2Fa&expire-zoom=10-12", "b:=parcels", "admin/=admin_units?webhook=http://127.0.0.1:9/b"})
	require.NoError(t, err)
	require.Equal(t, "b:county/=parcels?webhook=http%3A%2F%2F127.0.0.1%3A9%2Fa&expire-zoom=10-12", routes[0].String())
	a := WebhookSelect(routes, "http://127.0.0.1:9/a", "http://127.0.0.1:9/d", "")
	d := WebhookSelect(routes, "http://127.0.0.1:9/d", "http://127.0.0.1:9/d", "")
	ok, z := a(Changes{Bucket: "b", Key: "county/06.geojson", Target: "parcels"})
	require.True(t, ok)
	require.Equal(t, TileZoom{Min: 10, Max: 12, MaxTiles: DefaultTileZoom.MaxTiles, Buffer: DefaultTileZoom.Buffer}, *z)
	ok, _ = d(Changes{Bucket: "b", Key: "county/06.geojson", Target: "parcels"})
	require.False(t, ok, "the route names its own webhook")
	ok, z = d(Changes{Bucket: "b", Key: "other.geojson", Target: "parcels"})
	require.True(t, ok, "a route without a webhook goes to the default")
	require.Nil(t, z)
	ok, _ = a(Changes{Bucket: "x", Key: "admin/u.geojson", Target: "admin_units"})
	require.False(t, ok)
	_, err = ParseRoute("p/=parcels?webhook=ftp://x")
	require.Error(t, err)
}

// TestWebhookSelectLocalFiles: a local file's record is keyed by its
// absolute path, and the routes matched it by its path under the inbox
// or backfill directory: under localRoot it is matched as they matched it.
func TestWebhookSelectLocalFiles(t *testing.T) {
	routes, err := ParseRoutes([]string{"county/=parcels?webhook=http://127.0.0.1:9/a", "=parcels"})
	require.NoError(t, err)
	const a, d = "http://127.0.0.1:9/a", "http://127.0.0.1:9/d"
	rec := Changes{Bucket: LocalBucket, Key: "/srv/inbox/county/06.geojson", Target: "parcels"}
	for _, root := range []string{"/srv/inbox", "/srv/inbox/", "/srv//inbox"} {
		ok, _ := WebhookSelect(routes, a, d, root)(rec)
		require.True(t, ok, root)
		ok, _ = WebhookSelect(routes, d, d, root)(rec)
		require.False(t, ok, root)
	}
	ok, _ := WebhookSelect(routes, a, d, "/srv/inbox")(Changes{Bucket: LocalBucket, Key: "/srv/inbox/town.geojson", Target: "parcels"})
	require.False(t, ok, "outside county/")
	ok, _ = WebhookSelect(routes, a, d, "/srv/other")(rec)
	require.False(t, ok, "not under the root: matched by its whole path")
	ok, _ = WebhookSelect(routes, a, d, "/srv/inbox")(Changes{Bucket: "b", Key: "/srv/inbox/county/06.geojson", Target: "parcels"})
	require.False(t, ok, "only a local file's key is taken relative to the root")
}
