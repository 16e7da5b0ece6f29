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
	a := WebhookSelect(routes, "http://127.0.0.1:9/a", "http://127.0.0.1:9/d")
	d := WebhookSelect(routes, "http://127.0.0.1:9/d", "http://127.0.0.1:9/d")
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
