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
		{created("parcels/a.txt", 10), "", ingest.FilterSuffix},
		{created("parcels/a.gpkg", 10), "parcels", ""},
		{created("parcels/a.gdb.zip", 10), "parcels", ""},
		{created("parcels/a.gml.gz", 10), "parcels", ""},
		{created("parcels/a.xml", 10), "parcels", ""},
		{created("parcels/a.dat", 10), "", ingest.FilterSidecar},
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

// TestRouteOptions: a route's options set the job parameters of its
// objects, its suffixes restrict it (a miss falls through to a shorter
// route), and bad options are refused naming the route.
func TestRouteOptions(t *testing.T) {
	spec := "legacy/=parcels?source-srid=2154&encoding=cp1252&invalid=fail&null-geometry=fail&wrong-type=fail&suffixes=.zip|.SHP"
	r, err := ingest.ParseRoute(spec)
	require.NoError(t, err)
	require.Equal(t, ingest.RouteOptions{SourceSRID: 2154, Encoding: "cp1252", Invalid: "fail", NullGeometry: "fail", WrongType: "fail"}, r.Options)
	require.Equal(t, []string{".zip", ".SHP"}, r.Suffixes)
	again, err := ingest.ParseRoute(r.String())
	require.NoError(t, err)
	require.Equal(t, r, again, "String round-trips")

	base := ingest.DefaultParams("admin_units")
	base.PipelineVersion = "7"
	p := r.Params(base)
	require.Equal(t, "parcels", p.Target)
	require.Equal(t, "7", p.PipelineVersion, "what the route does not set is the caller's")
	require.Equal(t, 2154, p.SourceSRID)
	require.Equal(t, "cp1252", p.DefaultEncoding)
	require.Equal(t, [3]string{"fail", "fail", "fail"}, [3]string{p.Invalid, p.NullGeometry, p.WrongType})
	plain, err := ingest.ParseRoute("=parcels")
	require.NoError(t, err)
	require.Equal(t, ingest.DefaultParams("parcels"), plain.Params(ingest.DefaultParams("parcels")))

	// The options are part of the job key: the same object on a route with
	// other options is another job.
	k1, err := ingest.JobKey("b", "legacy/a.zip", "v", p.Map())
	require.NoError(t, err)
	k2, err := ingest.JobKey("b", "legacy/a.zip", "v", plain.Params(base).Map())
	require.NoError(t, err)
	require.NotEqual(t, k1, k2)

	routes, err := ingest.ParseRoutes([]string{spec, "=admin_units"})
	require.NoError(t, err)
	router := ingest.NewRouter(routes, nil)
	created := func(key string) ingest.Event {
		return ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: key, Size: 10, ETag: "e"}
	}
	rt, _, ok := router.Route(created("legacy/a.ZIP"))
	require.True(t, ok)
	require.Equal(t, "parcels", rt.Target)
	require.Equal(t, 2154, rt.Options.SourceSRID)
	rt, _, ok = router.Route(created("legacy/a.geojson"))
	require.True(t, ok, "a suffix the route does not take falls through to the catch-all")
	require.Equal(t, "admin_units", rt.Target)
	only, err := ingest.ParseRoutes([]string{spec})
	require.NoError(t, err)
	_, reason, ok := ingest.NewRouter(only, nil).Route(created("legacy/a.geojson"))
	require.False(t, ok)
	require.Equal(t, ingest.FilterSuffix, reason)

	for bad, want := range map[string]string{
		"x/=parcels?source-srid=abc":        "source-srid",
		"x/=parcels?source-srid=-4":         "source-srid",
		"x/=parcels?encoding=klingon":       "unknown code page",
		"x/=parcels?invalid=ignore":         "invalid-geometry policy",
		"x/=parcels?wrong-type=keep":        "wrong-type policy",
		"x/=parcels?suffixes=.txt":          "not a format geoingest reads",
		"x/=parcels?suffixes=zip":           "want an extension",
		"x/=parcels?colour=red":             "unknown option",
		"x/=parcels?invalid":                "want OPTION=VALUE",
		"x/=parcels?invalid=fail&invalid=x": "given twice",
	} {
		_, err := ingest.ParseRoute(bad)
		require.ErrorContains(t, err, want, bad)
		require.ErrorContains(t, err, bad, "the error names the route")
	}
}

// TestLayerParams: the layer and geometry-field options are job
// parameters in the key only when set, so that the keys of jobs that do
// not use them stay as they were.
func TestLayerParams(t *testing.T) {
	base := ingest.DefaultParams("parcels")
	r, err := ingest.ParseRoute("gpkg/=parcels?layer=parcels_2024|parcels_2025&geometry-field=footprint")
	require.NoError(t, err)
	p := r.Params(base)
	require.Equal(t, []string{"parcels_2024", "parcels_2025"}, p.Layers)
	require.Equal(t, "footprint", p.GeometryField)
	require.Equal(t, "gpkg/=parcels?layer=parcels_2024|parcels_2025&geometry-field=footprint", r.String())
	require.Equal(t, []string{"parcels_2024", "parcels_2025"}, p.Map()["layers"])
	require.Equal(t, "footprint", p.Map()["geometry_field"])
	_, hasLayers := base.Map()["layers"]
	_, hasField := base.Map()["geometry_field"]
	require.False(t, hasLayers || hasField, "unset, they are not in the key")
	k1, err := ingest.JobKey("b", "gpkg/a.gpkg", "v1", base.Map())
	require.NoError(t, err)
	k2, err := ingest.JobKey("b", "gpkg/a.gpkg", "v1", p.Map())
	require.NoError(t, err)
	require.NotEqual(t, k1, k2, "another layer choice is another job")
}

// TestParseRoutesRefusesAShadowedRoute: a route that an earlier one with
// the same prefix takes every key of could never be used: `serve --route
// 'p/=parcels?key=A' --route 'p/=parcels?key=B'` ran, and every upload
// under p/ got key A with nothing said. It is refused, naming both; routes
// of one prefix that split it by suffix, or by bucket, stay allowed.
func TestParseRoutesRefusesAShadowedRoute(t *testing.T) {
	for _, specs := range [][]string{
		{"p/=parcels?key=A", "p/=parcels?key=B"},
		{"p/=parcels,p/=admin_units+deletes"},
		{"p/=parcels", "uploads:p/=parcels?key=B"},
		{"p/=parcels?suffixes=.zip|.shp", "p/=parcels?suffixes=.ZIP&key=B"},
		{"p/=parcels?suffixes=.zip", "p/=parcels?suffixes=.zip"},
	} {
		_, err := ingest.ParseRoutes(specs)
		require.ErrorContains(t, err, "never used", "%v", specs)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	}
	for _, specs := range [][]string{
		{"p/=parcels?suffixes=.zip", "p/=parcels?key=B"},
		{"uploads:p/=parcels", "p/=parcels?key=B"},
		{"a:p/=parcels", "b:p/=parcels"},
		{"p/=parcels", "p/x/=parcels?key=B"},
		{"p/=parcels?suffixes=.zip", "p/=parcels?suffixes=.shp"},
	} {
		_, err := ingest.ParseRoutes(specs)
		require.NoError(t, err, "%v", specs)
	}
}
