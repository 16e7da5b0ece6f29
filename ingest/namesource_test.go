package ingest

import (
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/stretchr/testify/require"
)

// TestNameSource: an input error about the downloaded file names the
// upload instead: the file itself, what a reader says after its name (a
// layer of a GeoPackage), an entry of an archive.
func TestNameSource(t *testing.T) {
	dir := "/tmp/geoingest-job-1"
	src := Source{Bucket: "uploads", Key: "parcels/city.gpkg"}
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "city.gpkg"), "s3://uploads/parcels/city.gpkg: bad"},
		{filepath.Join(dir, "city.gpkg") + ` layer "roads"`, `s3://uploads/parcels/city.gpkg layer "roads": bad`},
		{filepath.Join(dir, "city.gpkg", "inner.shp"), "s3://uploads/parcels/city.gpkg!inner.shp: bad"},
		{"/elsewhere/x.shp", "/elsewhere/x.shp: bad"},
	} {
		err := NameSource(&geomio.Error{File: tc.file, Problem: "bad"}, dir, src)
		require.Equal(t, tc.want, err.Error())
	}
	shp := Source{Bucket: LocalBucket, Key: "/data/up/six.shp"}
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "six.prj"), "file:///data/up/six.prj: bad"},
		{filepath.Join(dir, "six.shp"), "file:///data/up/six.shp: bad"},
		{filepath.Join(dir, "other.prj"), "file:///data/up/six.shp!other.prj: bad"},
		// The stems of a set's parts match case-insensitively, as the
		// set's own rules match their extensions.
		{filepath.Join(dir, "SIX.prj"), "file:///data/up/SIX.prj: bad"},
		{filepath.Join(dir, "Six.DBF"), "file:///data/up/Six.DBF: bad"},
	} {
		err := NameSource(&geomio.Error{File: tc.file, Problem: "bad"}, dir, shp)
		require.Equal(t, tc.want, err.Error())
	}
	// PARCELS.prj beside parcels.shp is a part of its set, not an entry.
	upper := Source{Bucket: "uploads", Key: "in/parcels.shp"}
	err := NameSource(&geomio.Error{File: filepath.Join(dir, "PARCELS.prj"), Problem: "bad"}, dir, upper)
	require.Equal(t, "s3://uploads/in/PARCELS.prj: bad", err.Error())
	require.True(t, sameSet("PARCELS.prj", "parcels.shp"))
	require.False(t, sameSet("parcels2.prj", "parcels.shp"))
}
