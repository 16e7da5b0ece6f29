package ingest_test

import (
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

func TestRouter(t *testing.T) {
	routes, err := ingest.ParseRoutes([]string{"parcels/=parcels,admin/=admin_units", "parcels/admin/=admin_units"})
	require.NoError(t, err)
	r := ingest.NewRouter(routes, nil)
	created := func(key string, size int64) ingest.Event {
		return ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: key, Size: size, ETag: "e"}
	}
	for _, tc := range []struct {
		ev     ingest.Event
		target string
		reason string
	}{
		{created("parcels/a.geojson", 10), "parcels", ""},
		{created("parcels/a.GeoJSON", 10), "parcels", ""},
		{created("parcels/x/a.shp", 10), "parcels", ""},
		{created("parcels/a.ndjson", 10), "parcels", ""},
		{created("admin/a.zip", 10), "admin_units", ""},
		{created("parcels/admin/a.zip", 10), "admin_units", ""}, // longest prefix wins
		{ingest.Event{Name: "TestEvent", Bucket: "b"}, "", ingest.FilterTestEvent},
		{created("parcels/dir/", 0), "", ingest.FilterFolder},
		{created("parcels/empty.geojson", 0), "", ingest.FilterEmpty},
		{created("parcels/a.dbf", 10), "", ingest.FilterSidecar},
		{created("parcels/a.SHX", 10), "", ingest.FilterSidecar},
		{created("parcels/a.shp.xml", 10), "", ingest.FilterSidecar},
		{created("parcels/a.qix", 10), "", ingest.FilterSidecar},
		{ingest.Event{Name: "ObjectRemoved:Delete", Bucket: "b", Key: "parcels/a.geojson"}, "", ingest.FilterRemoval},
		{ingest.Event{Name: "ObjectRestore:Completed", Bucket: "b", Key: "parcels/a.geojson", Size: 3}, "", ingest.FilterEventType},
		{created("other/a.geojson", 10), "", ingest.FilterNoRoute},
		{created("parcels/a.csv", 10), "", ingest.FilterSuffix},
	} {
		rt, reason, ok := r.Route(tc.ev)
		require.Equal(t, tc.reason, reason, tc.ev.Key)
		require.Equal(t, tc.reason == "", ok, tc.ev.Key)
		require.Equal(t, tc.target, rt.Target, tc.ev.Key)
	}
}

func TestParseRoute(t *testing.T) {
	r, err := ingest.ParseRoute("uploads:admin/=admin_units")
	require.NoError(t, err)
	require.Equal(t, ingest.Route{Bucket: "uploads", Prefix: "admin/", Target: "admin_units"}, r)
	r, err = ingest.ParseRoute("=parcels")
	require.NoError(t, err)
	require.Equal(t, "", r.Prefix)
	for _, bad := range []string{"parcels/", "parcels/=", "x/=roads"} {
		_, err := ingest.ParseRoute(bad)
		require.Error(t, err, bad)
	}
	rs := ingest.NewRouter([]ingest.Route{{Prefix: "", Target: "parcels"}, {Prefix: "b/", Bucket: "other", Target: "admin_units"}}, nil)
	rt, _, ok := rs.Route(ingest.Event{Name: "ObjectCreated:Put", Bucket: "mine", Key: "b/x.json", Size: 1})
	require.True(t, ok)
	require.Equal(t, "parcels", rt.Target, "a route for another bucket does not match")
}

func TestRouterMirrorsDeletesWhenAsked(t *testing.T) {
	routes, err := ingest.ParseRoutes([]string{"parcels/=parcels+deletes,admin/=admin_units"})
	require.NoError(t, err)
	require.True(t, routes[0].MirrorDeletes)
	require.Equal(t, "parcels/=parcels+deletes", routes[0].String())
	r := ingest.NewRouter(routes, nil)
	removed := func(key string) ingest.Event {
		return ingest.Event{Name: "ObjectRemoved:Delete", Bucket: "b", Key: key, Sequencer: "0A"}
	}
	for _, tc := range []struct {
		ev     ingest.Event
		target string
		reason string
	}{
		{removed("parcels/a.geojson"), "parcels", ""},
		{ingest.Event{Name: "ObjectRemoved:DeleteMarkerCreated", Bucket: "b", Key: "parcels/x/a.shp"}, "parcels", ""},
		{removed("parcels/a.dbf"), "", ingest.FilterSidecar}, // the .shp's removal retires the set
		{removed("admin/a.zip"), "", ingest.FilterRemoval},   // that route does not mirror deletes
		{removed("other/a.zip"), "", ingest.FilterRemoval},
		{removed("parcels/dir/"), "", ingest.FilterFolder},
	} {
		rt, reason, ok := r.Route(tc.ev)
		require.Equal(t, tc.reason, reason, tc.ev.Key)
		require.Equal(t, tc.reason == "", ok, tc.ev.Key)
		require.Equal(t, tc.target, rt.Target, tc.ev.Key)
	}
	require.Equal(t, "delete:0A", removed("k").DeleteVersionToken())
	require.Equal(t, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY", ingest.Event{VersionID: "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"}.DeleteVersionToken())
}
