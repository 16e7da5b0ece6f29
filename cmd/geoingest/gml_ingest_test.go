package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestIngestGMLGeometryFields: `geoingest ingest` of a GML layer with two
// polygon fields (made with ogr2ogr: "centre", a small circle around each
// county's centroid, then "footprint", the county), uploaded with its .xsd
// beside it, as a .gml.gz beside its .xsd, and in a zip with its .xsd,
// reads the first polygonal field and records it on the job
// (job_crs.geometry_field, `jobs show`); --geometry-field footprint reads
// the other, with the corpus's own area; a field that does not exist fails
// the job, naming the file, the layer and the fields there are. Uploaded
// alone, without a schema, the same fields are found in the file.
func TestIngestGMLGeometryFields(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDALTool(t, "ogr2ogr")
	t.Parallel()
	counties := "../../testdata/corpus/six_counties/six_counties.shp"
	src := t.TempDir()
	out, err := exec.Command("ogr2ogr", "-f", "GML", "-dsco", "FORMAT=GML3", "-nlt", "MULTIPOLYGON", filepath.Join(src, "two.gml"), counties,
		"-dialect", "SQLITE", "-nln", "parcel",
		"-sql", "SELECT ST_Buffer(ST_Centroid(geometry), 0.001) AS centre, geometry AS footprint, NAME FROM six_counties").CombinedOutput()
	require.NoError(t, err, "%s", out)
	body, err := os.ReadFile(filepath.Join(src, "two.gml"))
	require.NoError(t, err)
	xsd, err := os.ReadFile(filepath.Join(src, "two.xsd"))
	require.NoError(t, err)
	put := func(dir, name string, b []byte) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(body)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	root := t.TempDir()
	loose := put(filepath.Join(root, "loose"), "two.gml", body)
	put(filepath.Join(root, "loose"), "two.xsd", xsd)
	gzipped := put(filepath.Join(root, "gz"), "two.gml.gz", gz.Bytes())
	put(filepath.Join(root, "gz"), "two.xsd", xsd)
	zipped := filepath.Join(root, "two.zip")
	zip := exec.Command("zip", "-qj", zipped, loose, filepath.Join(root, "loose", "two.xsd"))
	msg, err := zip.CombinedOutput()
	require.NoError(t, err, "zip: %s", msg)
	lone := put(filepath.Join(root, "lone"), "two.gml", body)

	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	code, stdout, errOut := run(t, env, "ingest", "--json", counties)
	require.Equal(t, 0, code, errOut)
	countyArea := parseLines(t, stdout)[0].AreaM2

	fieldOf := func(jobID string) string {
		code, out, errOut := run(t, env, "jobs", "show", "--format", "json", jobID)
		require.Equal(t, 0, code, errOut)
		var j struct {
			CRS []struct {
				Layer string `json:"layer"`
				Field string `json:"geometry_field"`
			} `json:"crs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &j), out)
		require.Len(t, j.CRS, 1, out)
		require.Equal(t, "parcel", j.CRS[0].Layer)
		return j.CRS[0].Field
	}
	for _, upload := range []string{loose, gzipped, zipped} {
		t.Run(filepath.Base(upload), func(t *testing.T) {
			code, stdout, errOut := run(t, env, "ingest", "--json", upload)
			require.Equal(t, 0, code, errOut)
			l := parseLines(t, stdout)[0]
			require.Equal(t, "written", l.Outcome)
			require.EqualValues(t, 6, l.Features)
			require.Less(t, l.AreaM2, countyArea/1000, "the small circles, not the counties")
			require.Equal(t, "centre", fieldOf(l.JobID))
			code, stdout, _ = run(t, env, "jobs", "show", l.JobID)
			require.Regexp(t, `(?m)^  geometry field +centre$`, stdout)

			code, stdout, errOut = run(t, env, "ingest", "--json", "--geometry-field", "footprint", upload)
			require.Equal(t, 0, code, errOut)
			l = parseLines(t, stdout)[0]
			require.Equal(t, "written", l.Outcome)
			require.InEpsilon(t, countyArea, l.AreaM2, 1e-9, "the counties")
			require.Equal(t, "footprint", fieldOf(l.JobID))

			code, stdout, _ = run(t, env, "ingest", "--json", "--geometry-field", "nope", upload)
			require.Equal(t, 1, code, stdout)
			l = parseLines(t, stdout)[0]
			require.Equal(t, "failed", l.Outcome)
			require.Contains(t, l.Error, filepath.Base(upload))
			require.Contains(t, l.Error, `layer "parcel": no geometry field "nope" (the layer has "centre", "footprint")`)
		})
	}

	// Alone, without its schema: the same, from the geometry properties
	// found in the file.
	code, stdout, errOut = run(t, env, "ingest", "--json", lone)
	require.Equal(t, 0, code, errOut)
	l := parseLines(t, stdout)[0]
	require.Equal(t, "written", l.Outcome)
	require.EqualValues(t, 6, l.Features)
	require.Less(t, l.AreaM2, countyArea/1000, "the small circles, not the counties")
	require.Equal(t, "centre", fieldOf(l.JobID))
	code, stdout, errOut = run(t, env, "ingest", "--json", "--geometry-field", "footprint", lone)
	require.Equal(t, 0, code, errOut)
	l = parseLines(t, stdout)[0]
	require.InEpsilon(t, countyArea, l.AreaM2, 1e-9, "the counties")
	require.Equal(t, "footprint", fieldOf(l.JobID))
}
