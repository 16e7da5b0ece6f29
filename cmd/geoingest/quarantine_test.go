package main

import (
	"archive/zip"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// quarantineFile is three parcels and the four features the policies
// leave out: a null geometry (whose attribute is markup, to be escaped),
// an empty one, a point and a line.
const quarantineFile = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"APN":"0001"},"geometry":{"type":"Polygon","coordinates":[[[13,52],[13.001,52],[13.001,52.001],[13,52.001],[13,52]]]}},
{"type":"Feature","properties":{"APN":"0002"},"geometry":{"type":"Polygon","coordinates":[[[13.01,52],[13.011,52],[13.011,52.001],[13.01,52.001],[13.01,52]]]}},
{"type":"Feature","properties":{"APN":"0003"},"geometry":{"type":"Polygon","coordinates":[[[13.02,52],[13.021,52],[13.021,52.001],[13.02,52.001],[13.02,52]]]}},
{"type":"Feature","properties":{"APN":"0004","owner":"<script>alert(1)</script>"},"geometry":null},
{"type":"Feature","properties":{"APN":"0005"},"geometry":{"type":"MultiPolygon","coordinates":[]}},
{"type":"Feature","properties":{"APN":"0006"},"geometry":{"type":"Point","coordinates":[13.5,52.5]}},
{"type":"Feature","properties":{"APN":"0007"},"geometry":{"type":"LineString","coordinates":[[13.5,52.5],[13.6,52.6]]}}
]}`

// TestQuarantineCommands: ingest reports the features it left out;
// `quarantine list`, `list JOB`, `show JOB INDEX` and `export JOB` (CSV
// and GeoJSON, leading zeros kept) show them; verify reconciles them; the
// console lists them (markup escaped) and exports them to a reader.
func TestQuarantineCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	dir := t.TempDir()
	path := filepath.Join(dir, "parcels.geojson")
	require.NoError(t, os.WriteFile(path, []byte(quarantineFile), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--no-guards", path)
	require.Equal(t, 0, code, out+errOut)
	var line struct {
		JobID       string `json:"job_id"`
		Outcome     string `json:"outcome"`
		Features    int64  `json:"features"`
		Quarantined int64  `json:"quarantined"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &line))
	require.Equal(t, "written", line.Outcome)
	require.EqualValues(t, 3, line.Features)
	require.EqualValues(t, 4, line.Quarantined)
	job := line.JobID

	code, out, errOut = run(t, env, "quarantine", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, job[:12]+"  ", "the table prints 12 characters of an id, as the others do")
	require.NotContains(t, out, job)
	require.Contains(t, out, "null-geometry 2, wrong-type 2")

	code, out, errOut = run(t, env, "quarantine", "list", job)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	require.Contains(t, lines[3], "wrong-type")
	require.Contains(t, lines[3], "Point is not polygonal")

	code, out, errOut = run(t, env, "quarantine", "show", job, "6")
	require.Equal(t, 0, code, errOut)
	var shown []struct {
		Index      int64             `json:"index"`
		Rule       string            `json:"rule"`
		Properties map[string]string `json:"properties"`
		Geometry   json.RawMessage   `json:"geometry"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
	require.Len(t, shown, 1)
	require.Equal(t, "0007", shown[0].Properties["APN"])
	require.Contains(t, string(shown[0].Geometry), `"LineString"`)
	code, _, errOut = run(t, env, "quarantine", "show", job, "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no feature 1")
	code, _, errOut = run(t, env, "quarantine", "list", "no-such-job")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such job")

	csvPath := filepath.Join(dir, "back.csv")
	code, _, errOut = run(t, env, "quarantine", "export", job, "--output", csvPath)
	require.Equal(t, 0, code, errOut)
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(t, err)
	require.Equal(t, []string{"index", "layer", "rule", "reason", "APN", "owner", "geometry"}, recs[0])
	require.Len(t, recs, 5)
	require.Equal(t, "0004", recs[1][4])
	code, out, errOut = run(t, env, "quarantine", "export", job, "--format", "geojson")
	require.Equal(t, 0, code, errOut)
	var fc struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &fc))
	require.Equal(t, "FeatureCollection", fc.Type)
	require.Len(t, fc.Features, 4)

	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "quarantine: 4 features left out by a policy")

	base := startConsole(t, env, "--console-token", "read-token")
	get := func(path string) (int, string, http.Header) {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer read-token")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	st, body, _ := get("/quarantine")
	require.Equal(t, 200, st)
	require.Contains(t, body, "/quarantine/"+job)
	st, body, _ = get("/quarantine/" + job)
	require.Equal(t, 200, st)
	require.Contains(t, body, "Point is not polygonal")
	require.NotContains(t, body, "<script>alert(1)")
	require.Contains(t, body, "&lt;script&gt;")
	st, body, hdr := get("/api/jobs/" + job + "/quarantine?format=csv")
	require.Equal(t, 200, st, body)
	require.Contains(t, hdr.Get("Content-Disposition"), "attachment")
	require.Contains(t, body, "0006,")
	st, body, _ = get("/api/jobs/" + job + "/quarantine?limit=2")
	require.Equal(t, 200, st, body)
	var page struct {
		Features []json.RawMessage `json:"features"`
		Next     struct {
			AfterIndex int64 `json:"after_index"`
		} `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Features, 2)
	require.EqualValues(t, 4, page.Next.AfterIndex)
	st, _, _ = get("/api/jobs/nope/quarantine")
	require.Equal(t, 404, st)
}

// TestServeCrashQuarantine: a `geoingest serve` worker is killed with
// SIGKILL before the write gate commits a file with four features the
// policies leave out: nothing is quarantined. A second worker writes it
// and quarantines each of the four once; the notification delivered again
// quarantines nothing twice; verify reconciles.
func TestServeCrashQuarantine(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	c := newCrashEnv(t, "quarantine-crash")
	env := map[string]string{"DATABASE_URL": c.db}
	args := []string{"--lease", lease.String(), "--visibility", visibility.String()}
	o := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", "literal:"+quarantineFile, 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	a := c.serve(t, []string{"GEOINGEST_TEST_CRASH_AT=" + ingest.HookBeforeCommit}, args...)
	select {
	case <-a.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("worker A never reached %s:\n%s", ingest.HookBeforeCommit, a.stderr.String())
	}
	require.True(t, a.killed(), "worker A died of SIGKILL:\n%s", a.stderr.String())
	require.EqualValues(t, 0, queryInt(t, c.db, `SELECT count(*) FROM geoingest_quarantine`))

	b := c.serve(t, nil, args...)
	eventually(t, lease+visibility+60*time.Second, "the file committed and the queue drained", func() bool {
		return c.committed(t) && c.sqsEmpty(t)
	})
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	eventually(t, 60*time.Second, "the duplicate drained", func() bool { return c.sqsEmpty(t) })
	b.stop(t)
	require.EqualValues(t, 3, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 4, queryInt(t, c.db, `SELECT count(*) FROM geoingest_quarantine`))
	require.EqualValues(t, 4, queryInt(t, c.db, `SELECT quarantined FROM jobs`))
	code, out, errOut := run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "quarantine: 4 features")
}

// TestQuarantineExportOfNothingSaysSo: exporting the quarantine of a job
// that left nothing out writes the empty export (a CSV header, an empty
// FeatureCollection) and exits 0, but says on stderr that there is
// nothing in it; it said nothing, and an uploader could be sent an empty
// file as the features to fix.
func TestQuarantineExportOfNothingSaysSo(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	path := filepath.Join(t.TempDir(), "county.geojson")
	writeSquareSource(t, path, 0, 3)
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	job := parseLines(t, out)[0].JobID
	for _, format := range []string{"csv", "geojson"} {
		code, out, errOut = run(t, env, "quarantine", "export", job[:12], "--format", format)
		require.Equal(t, 0, code, out+errOut)
		require.Contains(t, errOut, "geoingest quarantine export: job "+job+" has nothing in its quarantine: the export is empty", format)
	}
	require.Equal(t, `{"type":"FeatureCollection","features":[]}`+"\n", out)
}

// TestQuarantineGuardNamesTheJob: the reason of a version the quarantine
// guard held names the command with the version's job id, as the other
// hints do; it said "geoingest quarantine list JOB", leaving the id to
// find.
func TestQuarantineGuardNamesTheJob(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	path := filepath.Join(t.TempDir(), "parcels.geojson")
	writeSquareSource(t, path, 0, 3)
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	require.NoError(t, os.WriteFile(path, []byte(quarantineFile), 0o644))
	code, out, errOut = run(t, env, "ingest", "--json", "--guard-shrink", "off", "--guard-extent", "off", "--no-guard-drift", path)
	require.Equal(t, exitPending, code, out+errOut)
	l := parseLines(t, out)[0]
	require.Equal(t, "pending", l.Outcome)
	require.Contains(t, out, "(threshold 10%; geoingest quarantine list "+l.JobID[:12]+")")
	code, out, errOut = run(t, env, "pending", "list")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "geoingest quarantine list "+l.JobID[:12]+")")
}

// TestQuarantineCSVHeaderNamesEachColumnOnce: a quarantined feature with
// attributes named as the export's own columns (rule, Reason, index,
// layer, geometry, and geoingest_rule too) exports a CSV whose header
// names every column once: the attributes keep their names, the export's
// own columns take geoingest_ before theirs. The header said "rule" twice
// (and "index", "layer", ...), and a reader by name got one of the two.
func TestQuarantineCSVHeaderNamesEachColumnOnce(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	path := filepath.Join(t.TempDir(), "parcels.geojson")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"APN":"0001"},"geometry":{"type":"Polygon","coordinates":[[[13,52],[13.001,52],[13.001,52.001],[13,52.001],[13,52]]]}},
{"type":"Feature","properties":{"APN":"0002","rule":"R-7","Reason":"sold","index":"0042","layer":"L1","geometry":"n/a","geoingest_rule":"mine"},"geometry":null}
]}`), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--no-guards", path)
	require.Equal(t, 0, code, out+errOut)
	job := parseLines(t, out)[0].JobID
	code, out, errOut = run(t, env, "quarantine", "export", job, "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err, out)
	require.Len(t, rows, 2, out)
	seen := map[string]bool{}
	row := map[string]string{}
	for i, h := range rows[0] {
		require.False(t, seen[strings.ToLower(h)], "column %q twice: %v", h, rows[0])
		seen[strings.ToLower(h)] = true
		row[h] = rows[1][i]
	}
	for col, want := range map[string]string{
		"APN": "0002", "rule": "R-7", "Reason": "sold", "index": "0042", "layer": "L1", "geometry": "n/a", "geoingest_rule": "mine",
		"geoingest_index": "1", "geoingest_layer": "parcels", "geoingest_geoingest_rule": "null-geometry", "geoingest_reason": "", "geoingest_geometry": "",
	} {
		if col == "geoingest_reason" {
			require.Contains(t, row[col], "null", "the reason, in words")
			continue
		}
		require.Equal(t, want, row[col], "column %s: %v", col, rows)
	}
}

// TestEmptiedVersionIsPending: an emptied version of a source (a
// FeatureCollection of no features, then a shapefile of no records, in
// a zip) is held as pending, as a truncated one is: exit 4, the file and
// the shrink named, the source's current generation as it was, and it
// becomes current only when approved. It failed (exit 1), and no approval
// could apply it. A source's first version of nothing still fails, and
// says the file has no features (it said "0 null or empty, 0 not
// polygonal (points or lines), 0 with no area left after repair").
func TestEmptiedVersionIsPending(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	dir := t.TempDir()
	nothing := filepath.Join(dir, "nothing.geojson")
	require.NoError(t, os.WriteFile(nothing, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", nothing)
	require.Equal(t, 1, code, out+errOut)
	require.Equal(t, "failed", parseLines(t, out)[0].Outcome)
	require.Contains(t, out, "nothing.geojson: no polygonal features to write for parcels: the file has no features; an emptied version is refused, never applied")
	require.NotContains(t, out, "0 null or empty")

	path := filepath.Join(dir, "county.geojson")
	writeSquareSource(t, path, 0, 5)
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	first := parseLines(t, out)[0].JobID
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, 4, code, out+errOut)
	l := parseLines(t, out)[0]
	require.Equal(t, "pending", l.Outcome, out)
	require.Contains(t, out, "shrink: features down 100.0% (5 -> 0")
	require.Equal(t, first, queryString(t, env["DATABASE_URL"], `SELECT current_job_id FROM sources`))
	require.Equal(t, "5", queryString(t, env["DATABASE_URL"], `SELECT count(*) FROM parcels`))
	code, out, errOut = run(t, env, "pending", "approve", l.JobID, "--reason", "the county gave its parcels to the state")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, l.JobID, queryString(t, env["DATABASE_URL"], `SELECT current_job_id FROM sources`))
	require.Equal(t, "0", queryString(t, env["DATABASE_URL"], `SELECT count(*) FROM parcels`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	// A shapefile of no records, zipped, after a good one: pending too.
	shp := filepath.Join(dir, "shp")
	require.NoError(t, os.MkdirAll(shp, 0o755))
	good := filepath.Join(shp, "lots.geojson")
	writeSquareSource(t, good, 0, 3)
	ogr := exec.Command("ogr2ogr", "-f", "ESRI Shapefile", filepath.Join(shp, "lots.shp"), good)
	b, err := ogr.CombinedOutput()
	require.NoError(t, err, string(b))
	zipOf := func() string {
		zp := filepath.Join(dir, "lots.zip")
		zf, err := os.Create(zp)
		require.NoError(t, err)
		zw := zip.NewWriter(zf)
		for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
			data, err := os.ReadFile(filepath.Join(shp, "lots"+ext))
			require.NoError(t, err)
			w, err := zw.Create("lots" + ext)
			require.NoError(t, err)
			_, err = w.Write(data)
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		require.NoError(t, zf.Close())
		return zp
	}
	lots := zipOf()
	code, out, errOut = run(t, env, "ingest", "--json", lots)
	require.Equal(t, 0, code, out+errOut)
	ogr = exec.Command("ogr2ogr", "-f", "ESRI Shapefile", "-overwrite", "-where", "1 = 0", filepath.Join(shp, "lots.shp"), good)
	b, err = ogr.CombinedOutput()
	require.NoError(t, err, string(b))
	lots = zipOf()
	code, out, errOut = run(t, env, "ingest", "--json", lots)
	require.Equal(t, 4, code, out+errOut)
	require.Equal(t, "pending", parseLines(t, out)[0].Outcome, out)
}

// TestQuarantineGeoJSONKeepsTheUploadersAttributes: a quarantined feature
// whose attributes hold a geoingest_rule (an export sent back and
// uploaded again) keeps it in the GeoJSON export; the export's own takes
// geoingest_ before its name. The export wrote its rule over the
// uploader's value, which was lost.
func TestQuarantineGeoJSONKeepsTheUploadersAttributes(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	path := filepath.Join(t.TempDir(), "parcels.geojson")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"APN":"0001"},"geometry":{"type":"Polygon","coordinates":[[[13,52],[13.001,52],[13.001,52.001],[13,52.001],[13,52]]]}},
{"type":"Feature","properties":{"APN":"0002","geoingest_rule":"mine","geoingest_layer":"theirs"},"geometry":null}
]}`), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--no-guards", path)
	require.Equal(t, 0, code, out+errOut)
	job := parseLines(t, out)[0].JobID
	code, out, errOut = run(t, env, "quarantine", "export", job, "--format", "geojson")
	require.Equal(t, 0, code, out+errOut)
	var fc struct {
		Features []struct {
			Properties map[string]string `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &fc), out)
	require.Len(t, fc.Features, 1)
	p := fc.Features[0].Properties
	require.Equal(t, "mine", p["geoingest_rule"], out)
	require.Equal(t, "theirs", p["geoingest_layer"], out)
	require.Equal(t, "null-geometry", p["geoingest_geoingest_rule"], out)
	require.Equal(t, "parcels", p["geoingest_geoingest_layer"], out)
	require.Contains(t, p["geoingest_reason"], "null", out)
	require.Equal(t, "0002", p["APN"])
}
