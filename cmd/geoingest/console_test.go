package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// consoleFixture is a database with real jobs: the synthetic admin units
// and parcels, the Épinay cadastre, a source whose key holds a <script>
// element, and two failed uploads (broken GeoJSON; a shapefile with no
// .prj).
type consoleFixture struct {
	env                           map[string]string
	admin, parcels, epinay, xss   line
	broken, noPrj                 line
	xssPath, brokenPath, noPrjDir string
}

func newConsoleFixture(t *testing.T) *consoleFixture {
	t.Helper()
	f := &consoleFixture{env: map[string]string{"DATABASE_URL": pgtest.NewDB(t)}}
	// The uploads, copied under a short directory of their own (the
	// page's screenshot shows their paths).
	dir, err := os.MkdirTemp("", "uploads-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	place := func(src, dst string) string {
		dst = filepath.Join(dir, dst)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o644))
		return dst
	}
	admin := place(synthAdmin, "admin/districts.geojson")
	parcels := place(synthParcels, "parcels/parcels_10k.geojson")
	cadastre := place(epinay, "parcels/cadastre-91216-parcelles.json")
	f.brokenPath = filepath.Join(dir, "incoming", "broken.geojson")
	require.NoError(t, os.MkdirAll(filepath.Dir(f.brokenPath), 0o755))
	require.NoError(t, os.WriteFile(f.brokenPath, []byte(`{"type":"FeatureCollection","features":[{"type":"Feat`), 0o644))
	// A source key is user input: this one is an HTML element.
	xssDir := filepath.Join(dir, "incoming", `<script>alert("xss")<`)
	require.NoError(t, os.MkdirAll(xssDir, 0o755))
	f.xssPath = filepath.Join(xssDir, `script>.geojson`)
	require.NoError(t, os.WriteFile(f.xssPath, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"<b>bold</b>"},
		"geometry":{"type":"Polygon","coordinates":[[[13.0,52.0],[13.001,52.0],[13.001,52.001],[13.0,52.001],[13.0,52.0]]]}}]}`), 0o644))
	f.noPrjDir = filepath.Join(dir, "incoming", "noprj")
	for _, ext := range []string{".shp", ".shx", ".dbf"} {
		place("../../testdata/corpus/utm18_polygon_c_noprj/c_utm"+ext, "incoming/noprj/c_utm"+ext)
	}

	code, out, errOut := run(t, f.env, "ingest", "--json", "--target", "admin_units", admin)
	require.Equal(t, 0, code, errOut)
	f.admin = parseLines(t, out)[0]
	code, out, _ = run(t, f.env, "ingest", "--json", parcels, cadastre, f.xssPath, f.brokenPath, filepath.Join(f.noPrjDir, "c_utm.shp"))
	require.Equal(t, 1, code, "two uploads fail")
	ls := parseLines(t, out)
	require.Len(t, ls, 5)
	f.parcels, f.epinay, f.xss, f.broken, f.noPrj = ls[0], ls[1], ls[2], ls[3], ls[4]
	require.Equal(t, "written", f.xss.Outcome)
	require.NotEmpty(t, f.broken.Error)
	require.NotEmpty(t, f.noPrj.Error)
	return f
}

// startConsole runs `geoingest console` in-process on a free port and
// returns its base URL; it stops at cleanup.
func startConsole(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	m := NewMain()
	stdout := &testfiles.SyncBuffer{}
	stderr := &testfiles.SyncBuffer{}
	m.Stdout, m.Stderr = stdout, stderr
	m.Getenv = func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, append([]string{"console", "--addr", "127.0.0.1:0"}, args...)) }()
	var base string
	eventually(t, 60*time.Second, "the console to print its URL", func() bool {
		select {
		case code := <-done:
			t.Fatalf("console exited with %d:\n%s", code, stderr.String())
		default:
		}
		if m := regexp.MustCompile(`http://[0-9.:]+`).FindString(stdout.String()); m != "" {
			base = m
			return true
		}
		return false
	})
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Equal(t, 0, code, stderr.String())
		case <-time.After(30 * time.Second):
			t.Errorf("console did not stop")
		}
	})
	return base
}

// get fetches base+path with the request changed by opts, and returns
// the status and body.
func get(t *testing.T, u string, opts ...func(*http.Request)) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	for _, o := range opts {
		o(req)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

// getJSON fetches u and decodes its JSON body into v, requiring want.
func getJSON(t *testing.T, u string, want int, v any) {
	t.Helper()
	code, body, hd := get(t, u)
	require.Equal(t, want, code, body)
	require.Contains(t, hd.Get("Content-Type"), "application/json")
	reflect.ValueOf(v).Elem().SetZero()
	require.NoError(t, json.Unmarshal([]byte(body), v), body)
}

type apiJob struct {
	JobID        string   `json:"job_id"`
	State        string   `json:"state"`
	Source       string   `json:"source"`
	Target       string   `json:"target_table"`
	Features     int64    `json:"features"`
	AreaM2       float64  `json:"area_m2"`
	CRSMethod    string   `json:"crs_method"`
	WriteSeconds *float64 `json:"write_seconds"`
	Reason       string   `json:"reason"`
	Hint         string   `json:"hint"`
}

type apiPage struct {
	Jobs []apiJob `json:"jobs"`
	Next string   `json:"next"`
}

func jobsByID(p apiPage) map[string]apiJob {
	m := map[string]apiJob{}
	for _, j := range p.Jobs {
		m[j.JobID] = j
	}
	return m
}

// TestConsole drives `geoingest console` over a database with real jobs
// and two failed uploads: the JSON API (filters, paging, one job's
// record, sources, failures with what to do, the overview), the map, the
// page's escaping of a source key that holds <script>, and the token.
func TestConsole(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t)
	base := startConsole(t, f.env)

	t.Run("Jobs", func(t *testing.T) {
		var all apiPage
		getJSON(t, base+"/api/jobs", 200, &all)
		require.Len(t, all.Jobs, 6)
		require.Empty(t, all.Next)
		js := jobsByID(all)
		ep := js[f.epinay.JobID]
		require.Equal(t, "current", ep.State)
		require.Equal(t, "parcels", ep.Target)
		require.Equal(t, int64(4241), ep.Features)
		require.InDelta(t, f.epinay.AreaM2, ep.AreaM2, 1e-6)
		require.Equal(t, "default", ep.CRSMethod, "GeoJSON without crs")
		require.NotNil(t, ep.WriteSeconds)
		require.Greater(t, *ep.WriteSeconds, 0.0)
		br := js[f.broken.JobID]
		require.Equal(t, "failed", br.State, "a failed upload is in /api/jobs with state failed")
		require.Contains(t, br.Reason, "invalid json")
		require.Contains(t, br.Reason, f.brokenPath)
		require.NotEmpty(t, br.Hint)
		require.Equal(t, "failed", js[f.noPrj.JobID].State)
		require.Contains(t, js[f.noPrj.JobID].Hint, "source-srid")
		require.Equal(t, "file://"+f.xssPath, js[f.xss.JobID].Source)

		for q, want := range map[string][]string{
			"state=failed":                 {f.broken.JobID, f.noPrj.JobID},
			"state=current&target=parcels": {f.parcels.JobID, f.epinay.JobID, f.xss.JobID},
			"target=admin_units":           {f.admin.JobID},
			"state=committed":              {f.admin.JobID, f.parcels.JobID, f.epinay.JobID, f.xss.JobID},
			"source=" + url.QueryEscape("file://"+filepath.Dir(f.brokenPath)+"/"): {f.xss.JobID, f.broken.JobID, f.noPrj.JobID},
			"since=1h": {f.admin.JobID, f.parcels.JobID, f.epinay.JobID, f.xss.JobID, f.broken.JobID, f.noPrj.JobID},
			"since=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339): nil,
			"state=in-flight": nil,
		} {
			var p apiPage
			getJSON(t, base+"/api/jobs?"+q, 200, &p)
			var got []string
			for _, j := range p.Jobs {
				got = append(got, j.JobID)
			}
			require.ElementsMatch(t, want, got, q)
		}

		// Keyset pages of 2 give every job once, in the unpaged order.
		var paged []string
		next := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 4)
			var p apiPage
			getJSON(t, base+"/api/jobs?limit=2&cursor="+url.QueryEscape(next), 200, &p)
			require.LessOrEqual(t, len(p.Jobs), 2)
			for _, j := range p.Jobs {
				paged = append(paged, j.JobID)
			}
			if next = p.Next; next == "" {
				break
			}
		}
		var order []string
		for _, j := range all.Jobs {
			order = append(order, j.JobID)
		}
		require.Equal(t, order, paged)

		var e map[string]string
		getJSON(t, base+"/api/jobs?state=nonsense", 400, &e)
		require.Contains(t, e["error"], "want one of")
		getJSON(t, base+"/api/jobs?cursor=zzz", 400, &e)
		getJSON(t, base+"/api/jobs?since=yesterday", 400, &e)
	})

	t.Run("Job", func(t *testing.T) {
		var rec struct {
			Job   apiJob `json:"job"`
			Claim struct {
				State    string `json:"state"`
				Owner    string `json:"owner"`
				Attempts int    `json:"attempts"`
				History  []struct {
					Event string `json:"event"`
					Error string `json:"error"`
				} `json:"history"`
			} `json:"claim"`
			Ledger *struct {
				Status           string          `json:"status"`
				Features         int64           `json:"features"`
				ContentHash      string          `json:"content_hash"`
				Params           json.RawMessage `json:"params"`
				SourceCurrentJob string          `json:"source_current_job_id"`
			} `json:"ledger"`
			CRS []struct {
				Method string `json:"method"`
				SRID   int    `json:"srid"`
			} `json:"crs"`
			History []struct {
				JobID  string `json:"job_id"`
				Status string `json:"status"`
			} `json:"source_history"`
		}
		getJSON(t, base+"/api/jobs/"+f.epinay.JobID, 200, &rec)
		require.Equal(t, "COMMITTED", rec.Claim.State)
		require.Equal(t, 1, rec.Claim.Attempts)
		require.NotEmpty(t, rec.Claim.Owner)
		require.Len(t, rec.Claim.History, 2)
		require.Equal(t, "claimed", rec.Claim.History[0].Event)
		require.Equal(t, "committed", rec.Claim.History[1].Event)
		require.NotNil(t, rec.Ledger)
		require.Equal(t, "current", rec.Ledger.Status)
		require.Equal(t, int64(4241), rec.Ledger.Features)
		require.Equal(t, f.epinay.JobID, rec.Ledger.SourceCurrentJob)
		var params map[string]any
		require.NoError(t, json.Unmarshal(rec.Ledger.Params, &params))
		require.Equal(t, "parcels", params["target_table"])
		require.Len(t, rec.CRS, 1)
		require.Equal(t, 4326, rec.CRS[0].SRID)
		require.Len(t, rec.History, 1)
		require.Equal(t, f.epinay.JobID, rec.History[0].JobID)

		getJSON(t, base+"/api/jobs/"+f.noPrj.JobID, 200, &rec)
		require.Equal(t, "failed", rec.Job.State)
		require.Equal(t, "FAILED", rec.Claim.State)
		require.Nil(t, rec.Ledger)
		require.Contains(t, rec.Job.Reason, "unknown CRS")
		require.Len(t, rec.Claim.History, 2)
		require.Equal(t, "failed", rec.Claim.History[1].Event)
		require.Contains(t, rec.Claim.History[1].Error, "unknown CRS")

		var e map[string]string
		getJSON(t, base+"/api/jobs/"+strings.Repeat("0", 64), 404, &e)
		require.Contains(t, e["error"], "no such job")
		code, body, _ := get(t, base+"/jobs/"+f.noPrj.JobID)
		require.Equal(t, 200, code)
		require.Contains(t, body, "unknown CRS")
		require.Contains(t, body, "source-srid")
	})

	t.Run("SourcesFailuresOverview", func(t *testing.T) {
		var sp struct {
			Sources []struct {
				Source      string `json:"source"`
				Target      string `json:"target_table"`
				CurrentJob  string `json:"current_job_id"`
				Generations int    `json:"generations"`
				Features    int64  `json:"features"`
				History     []struct {
					JobID string `json:"job_id"`
				} `json:"history"`
			} `json:"sources"`
			Next string `json:"next"`
		}
		getJSON(t, base+"/api/sources", 200, &sp)
		require.Len(t, sp.Sources, 4, "failed uploads have no source row")
		for _, s := range sp.Sources {
			require.Equal(t, 1, s.Generations, s.Source)
			require.Len(t, s.History, 1)
			require.Equal(t, s.CurrentJob, s.History[0].JobID)
		}
		getJSON(t, base+"/api/sources?limit=3", 200, &sp)
		require.Len(t, sp.Sources, 3)
		require.NotEmpty(t, sp.Next)
		getJSON(t, base+"/api/sources?limit=3&cursor="+url.QueryEscape(sp.Next), 200, &sp)
		require.Len(t, sp.Sources, 1)
		require.Empty(t, sp.Next)
		getJSON(t, base+"/api/sources?target=admin_units", 200, &sp)
		require.Len(t, sp.Sources, 1)
		require.Equal(t, f.admin.JobID, sp.Sources[0].CurrentJob)

		var fp apiPage
		getJSON(t, base+"/api/failures", 200, &fp)
		require.ElementsMatch(t, []string{f.broken.JobID, f.noPrj.JobID}, []string{fp.Jobs[0].JobID, fp.Jobs[1].JobID})

		var ov struct {
			Jobs              int64            `json:"jobs"`
			States            map[string]int64 `json:"states"`
			Sources           int64            `json:"sources_current"`
			LastReportRefresh *time.Time       `json:"last_report_refresh"`
			DLQ               *int64           `json:"dead_letter_depth"`
		}
		getJSON(t, base+"/api/overview", 200, &ov)
		require.Equal(t, int64(6), ov.Jobs)
		require.Equal(t, map[string]int64{"failed": 2, "current": 4}, ov.States)
		require.Equal(t, int64(4), ov.Sources)
		require.NotNil(t, ov.LastReportRefresh, "ingest stores the report assignments")
		require.Nil(t, ov.DLQ, "the console alone has no queue")

		var cl struct {
			Claims []any `json:"claims"`
		}
		getJSON(t, base+"/api/claims", 200, &cl)
		require.Empty(t, cl.Claims)

		code, body, hd := get(t, base+"/map.svg")
		require.Equal(t, 200, code, body)
		require.Equal(t, "image/svg+xml", hd.Get("Content-Type"))
		require.Contains(t, body, "<svg")
	})

	t.Run("PageEscapesSourceKeys", func(t *testing.T) {
		code, body, hd := get(t, base+"/")
		require.Equal(t, 200, code, body)
		require.Contains(t, hd.Get("Content-Type"), "text/html")
		require.Contains(t, hd.Get("Content-Security-Policy"), "default-src 'none'")
		require.NotContains(t, body, "<script")
		require.Contains(t, body, "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;.geojson")
		require.Contains(t, body, "invalid json")
		require.Contains(t, body, "source-srid")
		// A filter that matches nothing, and one that is wrong.
		_, body, _ = get(t, base+"/?state=in-flight")
		require.Contains(t, body, "No job matches the filter")
		_, body, _ = get(t, base+"/?since=%3Cscript%3E")
		require.NotContains(t, body, "<script")
		require.Contains(t, body, "since &#34;&lt;script&gt;&#34;")
	})

	t.Run("Chromium", func(t *testing.T) { testConsoleChromium(t, f, base) })

	t.Run("Token", func(t *testing.T) {
		tb := startConsole(t, f.env, "--console-token", "s3cret")
		for _, p := range []string{"/", "/api/jobs", "/api/jobs/" + f.epinay.JobID, "/map.svg"} {
			code, _, hd := get(t, tb+p)
			require.Equal(t, 401, code, p)
			require.NotEmpty(t, hd.Values("WWW-Authenticate"))
			code, _, _ = get(t, tb+p, func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") })
			require.Equal(t, 401, code, p)
			code, _, _ = get(t, tb+p, func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") })
			require.Equal(t, 200, code, p)
			code, _, _ = get(t, tb+p, func(r *http.Request) { r.SetBasicAuth("ops", "s3cret") })
			require.Equal(t, 200, code, p)
		}
		// The environment variable sets it too.
		env := map[string]string{"GEOINGEST_CONSOLE_TOKEN": "from-env"}
		for k, v := range f.env {
			env[k] = v
		}
		te := startConsole(t, env)
		code, _, _ := get(t, te+"/api/sources")
		require.Equal(t, 401, code)
		code, _, _ = get(t, te+"/api/sources", func(r *http.Request) { r.Header.Set("Authorization", "Bearer from-env") })
		require.Equal(t, 200, code)
	})
}

// TestServeConsole: serve mounts the console beside /metrics; with a
// token the console needs it and /metrics, /healthz and /readyz do not.
func TestServeConsole(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	s := startServe(t, env, "--inbox", t.TempDir(), "--console-token", "tok")
	base := strings.TrimSuffix(s.metrics, "/metrics")
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		code, _, _ := get(t, base+p)
		require.Equal(t, 200, code, p)
	}
	code, _, _ := get(t, base+"/api/overview")
	require.Equal(t, 401, code)
	var ov map[string]any
	code, body, _ := get(t, base+"/api/overview", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") })
	require.Equal(t, 200, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &ov))
	require.Nil(t, ov["dead_letter_depth"], "an inbox has no dead-letter queue")
	code, _, _ = get(t, base+"/", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") })
	require.Equal(t, 200, code)
	code, _, _ = get(t, base+"/nothing-here", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") })
	require.Equal(t, 404, code)
}

// TestConsoleLeastPrivilege: a job written by the writer role (its claim
// history recorded by the trigger, with the writer's privileges) is read
// back by `geoingest console` logged in as the analyst: the page, the
// job's record with its history, and the overview.
func TestConsoleLeastPrivilege(t *testing.T) {
	t.Parallel()
	d := setupLeastPrivilege(t)
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": d.writer}, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	job := parseLines(t, out)[0]
	base := startConsole(t, map[string]string{"DATABASE_URL": d.analyst})
	var rec struct {
		Claim struct {
			History []struct {
				Event string `json:"event"`
			} `json:"history"`
		} `json:"claim"`
	}
	getJSON(t, base+"/api/jobs/"+job.JobID, 200, &rec)
	require.Len(t, rec.Claim.History, 2)
	var ov map[string]any
	getJSON(t, base+"/api/overview", 200, &ov)
	code, body, _ := get(t, base+"/")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "cadastre-91216-parcelles.json")
}

// TestServeConsoleDeadLetterDepth: under serve with an SQS queue and a
// dead-letter queue, the console shows the dead-letter depth (0, then 1
// once an unparseable upload is dead-lettered) and the failed job with
// its reason.
func TestServeConsoleDeadLetterDepth(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	st := testsrv.S3(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "uploads"
	st.NewBucket(t, bucket, true)
	qURL := sq.NewQueue(t, "console-events", 30*time.Second)
	dlqURL := sq.NewQueue(t, "console-dlq", 30*time.Second)
	srv := startServe(t, awsEnv, "--queue-url", qURL, "--dlq-url", dlqURL, "--database-url", db, "--wait", "1s")
	base := strings.TrimSuffix(srv.metrics, "/metrics")
	depth := func() *float64 {
		var ov struct {
			DLQ *float64 `json:"dead_letter_depth"`
		}
		getJSON(t, base+"/api/overview", 200, &ov)
		return ov.DLQ
	}
	require.NotNil(t, depth())
	require.Zero(t, *depth())

	bad := upload(t, st.Client, bucket, "parcels/bad.geojson", "literal:this is not GeoJSON at all", 1)
	sendBody(t, sq.Client, qURL, notification(bucket, bad))
	eventually(t, 60*time.Second, "the dead-letter depth to be 1", func() bool {
		d := depth()
		return d != nil && *d == 1
	})
	var fp apiPage
	getJSON(t, base+"/api/failures", 200, &fp)
	require.Len(t, fp.Jobs, 1)
	require.Equal(t, "failed", fp.Jobs[0].State)
	require.Contains(t, fp.Jobs[0].Source, "s3://uploads/parcels/bad.geojson")
	require.NotEmpty(t, fp.Jobs[0].Reason)
}
