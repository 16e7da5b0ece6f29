package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

// TestIngestBadInputs: through the CLI, every bad upload exits with status
// 1 and a specific message naming the file; its claim is FAILED with that
// message as last_error, and there are no ledger rows and no features.
func TestIngestBadInputs(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	six := "../../testdata/corpus/six_counties/six_counties"
	shp, err := os.ReadFile(six + ".shp")
	require.NoError(t, err)
	points := []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"name":"a"}}]}`)

	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dir string) string
		flags []string
		want  string
	}{
		{"zip traversal", func(t *testing.T, dir string) string {
			return testfiles.Zip(t, filepath.Join(dir, "evil.zip"), "ok.dbf", []byte("x"), "../x.shp", shp)
		}, nil, `unsafe zip entry: parent directory in path "../x.shp"`},
		{"zip bomb", func(t *testing.T, dir string) string {
			// 64 MiB of zeros, about 64 KiB deflated.
			return testfiles.Zip(t, filepath.Join(dir, "bomb.zip"), "bomb/a.shp", make([]byte, 64<<20))
		}, nil, "zip entry compression ratio above 200"},
		{"bad entry inside a zip is named archive!entry", func(t *testing.T, dir string) string {
			shx, err := os.ReadFile(six + ".shx")
			require.NoError(t, err)
			return testfiles.Zip(t, filepath.Join(dir, "parcels.zip"), "d/a.shp", shp, "d/a.shx", shx, "d/a.dbf", []byte("x"))
		}, nil, "parcels.zip!d/a.dbf: truncated dbf header"},
		{"truncated shp", func(t *testing.T, dir string) string {
			p := testfiles.CopySet(t, six, dir, "six", ".shx", ".dbf", ".prj")
			require.NoError(t, os.WriteFile(p, shp[:len(shp)/2], 0o644))
			return p
		}, nil, "truncated"},
		{"corrupt geojson", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "corrupt.geojson")
			require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,"x"]]]},"properties":{}}]}`), 0o644))
			return p
		}, nil, "feature 0 at byte"},
		{"points with --wrong-type fail", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "points.geojson")
			require.NoError(t, os.WriteFile(p, points, 0o644))
			return p
		}, []string{"--wrong-type", "fail"}, "not polygonal (wrong-type policy is fail)"},
		{"points with --wrong-type skip", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "points.geojson")
			require.NoError(t, os.WriteFile(p, points, 0o644))
			return p
		}, nil, "no polygonal features to write for parcels: 0 null or empty, 1 not polygonal"},
		{"polygon ring not closed", func(t *testing.T, dir string) string {
			// RFC 7946 rings are closed; PostGIS refuses to parse one that
			// is not. It used to surface as a transient database error
			// (SQLSTATE XX000) and be retried.
			p := filepath.Join(dir, "unclosed.geojson")
			require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[2,48],[2.01,48],[2.01,48.01],[2,48.01]]]},"properties":{}}]}`), 0o644))
			return p
		}, nil, "feature 0 at byte 162: invalid geometry: polygon 0 ring 0 is not closed"},
		{"coordinates outside the CRS's domain", func(t *testing.T, dir string) string {
			// Declared British National Grid, coordinates no projection
			// can invert: ST_Transform fails the same way on every retry.
			p := filepath.Join(dir, "bng.geojson")
			require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::27700"}},"features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[1e15,1e15],[2e15,1e15],[2e15,2e15],[1e15,1e15]]]},"properties":{}}]}`), 0o644))
			return p
		}, nil, "PostGIS cannot use a geometry of this upload: transform: Point outside of projection domain"},
		{"WGS 84 .prj on projected coordinates", func(t *testing.T, dir string) string {
			// A UTM polygon with the wrong .prj beside it: GDAL and PostGIS
			// accept it as lon/lat and report a continent-sized area.
			p := testfiles.CopySet(t, "../../testdata/corpus/utm18_polygon_c_noprj/c_utm", dir, "c_utm", ".shp", ".shx", ".dbf")
			data, err := os.ReadFile(six + ".prj")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "c_utm.prj"), data, 0o644))
			return p
		}, nil, "outside longitude/latitude range, but the CRS is EPSG:4326"},
		{"--source-srid 4326 on projected coordinates", func(t *testing.T, dir string) string {
			return testfiles.CopySet(t, "../../testdata/corpus/utm18_polygon_c_noprj/c_utm", dir, "c_utm", ".shp", ".shx", ".dbf")
		}, []string{"--source-srid", "4326"}, "outside longitude/latitude range, but the CRS is EPSG:4326"},
		{"unknown CRS", func(t *testing.T, dir string) string {
			return testfiles.CopySet(t, "../../testdata/corpus/blockgroups_noprj/blockgroups", dir, "blockgroups", ".shp", ".shx", ".dbf")
		}, nil, "unknown CRS"},
		{"unsupported format", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "parcels.dxf")
			require.NoError(t, os.WriteFile(p, []byte("0\nSECTION\n"), 0o644))
			return p
		}, nil, "unsupported format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.make(t, t.TempDir())
			args := append(append([]string{"ingest", "--json"}, tc.flags...), file)
			code, out, _ := run(t, env, args...)
			require.Equal(t, 1, code, out)
			ls := parseLines(t, out)
			require.Len(t, ls, 1)
			l := ls[0]
			require.Equal(t, "failed", l.Outcome)
			require.Contains(t, l.Error, tc.want)
			require.Contains(t, l.Error, "file://"+file, "the message names the file")
			require.NotContains(t, l.Error, "geoingest-job-", "not the temporary download")
			require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE job_id = $1 AND state = 'FAILED' AND last_error = $2`, l.JobID, l.Error))
			require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs`))
			require.Zero(t, queryInt(t, db, `SELECT count(*) FROM parcels`))

			// Without --json the message goes to stderr; the status is the same.
			code, _, errOut := run(t, env, append([]string{"ingest"}, args[2:]...)...)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, tc.want)
			require.Contains(t, errOut, file)
		})
	}
}
