package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

func TestJobsCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	bad := filepath.Join(t.TempDir(), "bad.geojson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection","features":[{"type":"Feat`), 0o644))
	code, out, _ := run(t, env, "ingest", "--json", epinay, bad)
	require.Equal(t, 1, code)
	ls := parseLines(t, out)
	good, failed := ls[0], ls[1]

	code, out, errOut := run(t, env, "jobs")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, good.JobID[:12]+` +COMMITTED +current +file://.*cadastre-91216-parcelles.json +parcels +4241 `, out)
	require.Regexp(t, failed.JobID[:12]+` +FAILED +- +file://`+bad+`.*invalid json`, out)

	code, out, errOut = run(t, env, "jobs", "list", "--state", "FAILED", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var js []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &js))
	require.Len(t, js, 1)
	require.Equal(t, failed.JobID, js[0]["job_id"])
	require.Contains(t, js[0]["last_error"], "file://"+bad)

	code, out, errOut = run(t, env, "jobs", "show", good.JobID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "current: the source's current generation")
	require.Contains(t, out, "4241, 3836490.43 m²")

	code, out, errOut = run(t, env, "jobs", "sources")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `cadastre-91216-parcelles.json +parcels +1 +`+good.JobID[:12]+` +1 +4241 +3836490`, out)

	code, _, errOut = run(t, env, "jobs", "show", "0000")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such job")
}

// TestJobsShowCRS: jobs show prints the CRS each job was read in: an ESRI
// .prj identified to its EPSG code by PROJ with its confidence, and a
// custom definition registered under geoingest's SRID range, with the
// file's own text.
func TestJobsShowCRS(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	src := "../../testdata/corpus/utm18_polygon_a/a_utm"
	dir := t.TempDir()
	for _, name := range []string{"utm", "custom"} {
		for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
			b, err := os.ReadFile(src + ext)
			require.NoError(t, err)
			if ext == ".prj" && name == "custom" {
				// The same Transverse Mercator with a central meridian of
				// its own: no EPSG CRS is equivalent.
				b = []byte(strings.NewReplacer("NAD_1983_UTM_Zone_18N", "County_Grid", `"Central_Meridian",-75.0`, `"Central_Meridian",-74.95`).Replace(string(b)))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+ext), b, 0o644))
		}
	}
	code, out, errOut := run(t, env, "ingest", "--json", filepath.Join(dir, "utm.shp"), filepath.Join(dir, "custom.shp"))
	require.Equal(t, 0, code, errOut)
	ls := parseLines(t, out)

	code, out, errOut = run(t, env, "jobs", "show", ls[0].JobID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `crs +EPSG:26918 NAD83 / UTM zone 18N, identified by PROJ at [0-9]+ %`, out)
	require.Contains(t, out, `file's text  PROJCS["NAD_1983_UTM_Zone_18N"`)

	code, out, errOut = run(t, env, "jobs", "show", ls[1].JobID)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `crs +custom "County_Grid", registered as SRID 99[0-8][0-9]{3}`, out)
	require.Contains(t, out, "definition")
	require.Contains(t, out, `"Central_Meridian",-74.95`)

	code, out, errOut = run(t, env, "jobs", "show", "--format", "json", ls[1].JobID)
	require.Equal(t, 0, code, errOut)
	var j struct {
		CRS []struct {
			Method string `json:"method"`
			SRID   int    `json:"srid"`
		} `json:"crs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.CRS, 1)
	require.Equal(t, "custom", j.CRS[0].Method)
	require.GreaterOrEqual(t, j.CRS[0].SRID, 990000)
}
