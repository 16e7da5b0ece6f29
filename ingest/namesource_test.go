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
}
