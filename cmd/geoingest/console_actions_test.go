package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// squares is a GeoJSON of n small squares, one parcel each.
func squares(n int) string {
	var fs []string
	for i := 0; i < n; i++ {
		x := 2.30 + float64(i)*0.001
		fs = append(fs, fmt.Sprintf(`{"type":"Feature","properties":{"id":"%03d"},"geometry":{"type":"Polygon","coordinates":[[[%.4f,48.85],[%.4f,48.85],[%.4f,48.8505],[%.4f,48.8505],[%.4f,48.85]]]}}`,
			i, x, x+0.0005, x+0.0005, x, x))
	}
	return `{"type":"FeatureCollection","features":[` + strings.Join(fs, ",") + `]}`
}

// consoleClient calls a console with one credential.
type consoleClient struct {
	t    *testing.T
	base string
	auth string
}

func (c consoleClient) do(method, path string, hdr map[string]string, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func basicAuth(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// apiDeadLetter is a dead letter as /api/deadletters gives it.
type apiDeadLetter struct {
	ID     string   `json:"id"`
	Body   string   `json:"body"`
	Reason string   `json:"reason"`
	JobIDs []string `json:"job_ids"`
}

// TestServeConsoleRetryAndDeadLetters: serve on SQS (fauxqs) with a
// dead-letter queue. A job fails at a worker limit (--max-features 2 on a
// file of 5), a second at an unparseable file, and a message that is not
// an event is dead-lettered with no job. serve is restarted with the limit
// raised and an operator token.
//   - The read-only token reads the dead letters and acts on nothing; a
//     form without the CSRF token, or from elsewhere, acts on nothing.
//   - The operator deletes the message with no job (a second delete: 404).
//   - The operator clicks Retry on the failed job's page in Chromium,
//     while the same event is also delivered again (redelivery): the job
//     is written once (one ledger row, 5 parcels), a retry of it now
//     does nothing (409), and the claim history shows the re-run.
//   - The operator clicks Re-drive on the dead-letter page: the
//     unparseable file's event runs through the gates again, fails again
//     (attempt 2) and is dead-lettered again with its reason. Two
//     retries of it at once re-drive no dead letter twice.
func TestServeConsoleRetryAndDeadLetters(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	st := testsrv.S3(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "uploads"
	st.NewBucket(t, bucket, true)
	qURL := sq.NewQueue(t, "retry-events", 30*time.Second)
	dlqURL := sq.NewQueue(t, "retry-dlq", 30*time.Second)

	five := upload(t, st.Client, bucket, "parcels/five.geojson", "literal:"+squares(5), 1)
	bad := upload(t, st.Client, bucket, "parcels/bad<b>.geojson", "literal:this is not GeoJSON at all", 2)
	sendBody(t, sq.Client, qURL, notification(bucket, five))
	sendBody(t, sq.Client, qURL, notification(bucket, bad))
	sendBody(t, sq.Client, qURL, "not an event <script>alert(1)</script>")
	// A copy that finds the claim held comes back when the lease (3 s) ends.
	args := []string{"--queue-url", qURL, "--dlq-url", dlqURL, "--database-url", db, "--wait", "1s", "--backoff", "1s", "--visibility", "10s", "--lease", "3s"}
	srv := startServe(t, awsEnv, append(args, "--max-features", "2")...)
	eventually(t, 60*time.Second, "two jobs failed and three messages dead-lettered", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED'`) == 2 &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") == 3
	})
	srv.stop(t)
	fiveJob := queryText(t, db, `SELECT job_id FROM claims WHERE source_key = 'parcels/five.geojson'`)
	badJob := queryText(t, db, `SELECT job_id FROM claims WHERE source_key = 'parcels/bad<b>.geojson'`)
	require.Contains(t, queryText(t, db, `SELECT last_error FROM claims WHERE job_id = $1`, fiveJob), "max-features")

	// The CLI lists them, with the job each names.
	cli := with(awsEnv, "GEOINGEST_QUEUE_URL", qURL, "GEOINGEST_DLQ_URL", dlqURL, "DATABASE_URL", db)
	code, out, errOut := run(t, cli, "deadletters", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fiveJob)
	require.Contains(t, out, badJob)
	require.Equal(t, 4, len(strings.Split(strings.TrimSpace(out), "\n")), out)

	srv = startServe(t, awsEnv, append(args, "--console-token", "read-token", "--console-operator-token", "op-token")...)
	base := strings.TrimSuffix(srv.metrics, "/metrics")
	reader := consoleClient{t, base, "Bearer read-token"}
	op := consoleClient{t, base, "Bearer op-token"}
	browser := consoleClient{t, base, basicAuth("alice", "op-token")}

	letters := func() []apiDeadLetter {
		t.Helper()
		code, body := reader.do("GET", "/api/deadletters", nil, "")
		require.Equal(t, 200, code, body)
		var v struct {
			DeadLetters []apiDeadLetter `json:"dead_letters"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		return v.DeadLetters
	}
	byJob := map[string]apiDeadLetter{}
	var noJob apiDeadLetter
	for _, dl := range letters() {
		require.LessOrEqual(t, len(dl.JobIDs), 1)
		if len(dl.JobIDs) == 0 {
			noJob = dl
			continue
		}
		byJob[dl.JobIDs[0]] = dl
	}
	require.Len(t, byJob, 2, "each failed job's dead letter names it")
	require.Contains(t, byJob[fiveJob].Reason, "max-features")
	require.NotEmpty(t, noJob.ID)

	// The read-only token acts on nothing; neither does a form without
	// the CSRF token or one from another site.
	for _, path := range []string{"/api/jobs/" + fiveJob + "/retry", "/api/deadletters/" + noJob.ID + "/delete", "/api/deadletters/" + noJob.ID + "/redrive"} {
		code, _ := reader.do("POST", path, nil, "x=1")
		require.Equal(t, http.StatusUnauthorized, code, path)
	}
	code, _ = browser.do("POST", "/jobs/"+fiveJob+"/retry", nil, "x=1")
	require.Equal(t, http.StatusForbidden, code, "no CSRF token")
	code, _ = browser.do("POST", "/deadletters/"+noJob.ID+"/delete", map[string]string{"Sec-Fetch-Site": "cross-site"}, "csrf=0")
	require.Equal(t, http.StatusForbidden, code, "cross-site")
	_, page := reader.do("GET", "/deadletters", nil, "")
	require.NotContains(t, page, `name="csrf"`, "a reader gets no forms")
	require.NotContains(t, page, "<script>alert(1)")
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	_, page = reader.do("GET", "/jobs/"+fiveJob, nil, "")
	require.NotContains(t, page, `class="retry"`)
	require.Len(t, letters(), 3, "nothing was acted on")

	// Delete the message that is no event (the CLI); a second delete
	// (the API) finds nothing.
	code, out, errOut = run(t, cli, "deadletters", "delete", noJob.ID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "deleted")
	code, body := op.do("POST", "/api/deadletters/"+noJob.ID+"/delete", nil, "")
	require.Equal(t, http.StatusNotFound, code, body)

	// Retry the failed job in Chromium; its event is also delivered again
	// right after (a redelivery racing the re-driven message): it is
	// written once.
	_, page = browser.do("GET", "/jobs/"+fiveJob, nil, "")
	require.Contains(t, page, `class="retry"`, page)
	bin := chromiumPath(t)
	done := cdpClick(t, bin, base+"/jobs/"+fiveJob, basicAuth("alice", "op-token"), "button.retry", "document.getElementById('done')?.textContent")
	require.Equal(t, "retried: the event is delivered again", strings.TrimSpace(done))
	sendBody(t, sq.Client, qURL, notification(bucket, five))
	eventually(t, 60*time.Second, "the retried job to be written", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_id = $1 AND status = 'current'`, fiveJob) == 1
	})
	eventually(t, 60*time.Second, "every copy to settle", func() bool { return sqsDepth(t, sq.Client, qURL) == 0 })
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 5, queryInt(t, db, `SELECT feature_count FROM jobs WHERE job_id = $1`, fiveJob))
	require.EqualValues(t, 5, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 1, srv.metric(t, `geoingest_claims_total{result="duplicate"}`)+srv.metric(t, `geoingest_write_gate_total{result="already_present"}`),
		"the extra copy is a duplicate (after it found the claim held, if it did)")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claim_events WHERE job_id = $1 AND event = 'committed'`, fiveJob))
	code, body = op.do("POST", "/api/jobs/"+fiveJob+"/retry", nil, "")
	require.Equal(t, http.StatusConflict, code, body)
	require.Contains(t, body, "not failed")
	code, body = op.do("POST", "/api/jobs/no-such-job/retry", nil, "")
	require.Equal(t, http.StatusNotFound, code, body)

	// Re-drive the other dead letter in Chromium: its event runs again and
	// fails again, with its reason.
	require.Len(t, letters(), 1)
	done = cdpClick(t, bin, base+"/deadletters", basicAuth("alice", "op-token"), "button.redrive", "document.getElementById('done')?.textContent")
	require.Equal(t, byJob[badJob].ID+" re-driven", strings.TrimSpace(done))
	eventually(t, 60*time.Second, "the re-driven job to fail again", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE job_id = $1 AND state = 'FAILED' AND attempts = 2`, badJob) == 1 &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") == 1
	})
	eventually(t, 30*time.Second, "its new dead letter", func() bool {
		l := letters()
		return len(l) == 1 && len(l[0].JobIDs) == 1 && l[0].JobIDs[0] == badJob && l[0].ID != byJob[badJob].ID
	})
	// A retry of it by the CLI, then two at once by the API (a double
	// click): no dead
	// letter is re-driven twice. (The second may find a new dead letter if
	// the first's delivery has failed again meanwhile: that is a retry of
	// a new failure.)
	type answer struct {
		code int
		body string
	}
	code, out, errOut = run(t, cli, "deadletters", "retry", badJob)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, badJob+" retried")
	eventually(t, 60*time.Second, "the job to fail a third time", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE job_id = $1 AND state = 'FAILED' AND attempts = 3`, badJob) == 1 && len(letters()) == 1
	})
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			code, body := op.do("POST", "/api/jobs/"+badJob+"/retry", nil, "")
			answers <- answer{code, body}
		}()
	}
	redriven := map[string]int{}
	for range 2 {
		a := <-answers
		if a.code == http.StatusConflict {
			continue
		}
		require.Equal(t, 200, a.code, a.body)
		var res struct{ Redriven []string }
		require.NoError(t, json.Unmarshal([]byte(a.body), &res))
		for _, id := range res.Redriven {
			redriven[id]++
		}
	}
	require.NotEmpty(t, redriven)
	for id, n := range redriven {
		require.Equal(t, 1, n, "dead letter %s re-driven twice", id)
	}
}

// queryText is the one text value sql returns.
func queryText(t *testing.T, db, sql string, args ...any) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var s string
	require.NoError(t, conn.QueryRow(context.Background(), sql, args...).Scan(&s), sql)
	return s
}

// TestServeInboxConsoleRetry: serve on an inbox. An unparseable file fails
// and its reason file is its dead letter, naming the job; the operator's
// retry (the API) delivers the file again in this serve, through the
// gates: it fails again (attempt 2) with a new reason file. A retry
// answered while none is left is 409; the read-only token cannot retry.
func TestServeInboxConsoleRetry(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.geojson"), []byte("this is not GeoJSON"), 0o644))
	srv := startServe(t, nil, "--inbox", dir, "--database-url", db, "--poll", "100ms", "--settle", "200ms",
		"--console-token", "read-token", "--console-operator-token", "op-token")
	eventually(t, 30*time.Second, "the file to fail", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED'`) == 1
	})
	job := queryText(t, db, `SELECT job_id FROM claims`)
	base := strings.TrimSuffix(srv.metrics, "/metrics")
	reader := consoleClient{t, base, "Bearer read-token"}
	op := consoleClient{t, base, "Bearer op-token"}
	var dls struct {
		DeadLetters []apiDeadLetter `json:"dead_letters"`
	}
	eventually(t, 10*time.Second, "its dead letter", func() bool {
		code, body := reader.do("GET", "/api/deadletters", nil, "")
		require.Equal(t, 200, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &dls))
		return len(dls.DeadLetters) == 1
	})
	require.Equal(t, "bad.geojson", dls.DeadLetters[0].ID)
	require.Equal(t, []string{job}, dls.DeadLetters[0].JobIDs)
	code, _ := reader.do("POST", "/api/jobs/"+job+"/retry", nil, "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := op.do("POST", "/api/jobs/"+job+"/retry", nil, "")
	require.Equal(t, 200, code, body)
	eventually(t, 30*time.Second, "the retried file to fail again", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE job_id = $1 AND state = 'FAILED' AND attempts = 2`, job) == 1
	})
	eventually(t, 10*time.Second, "its new reason file", func() bool {
		_, err := os.Stat(filepath.Join(dir, ".dead-letter", "bad.geojson.reason"))
		return err == nil
	})
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM jobs`))
	code, body = op.do("POST", "/api/deadletters/bad.geojson/delete", nil, "")
	require.Equal(t, 200, code, body)
	code, body = op.do("POST", "/api/jobs/"+job+"/retry", nil, "")
	require.Equal(t, http.StatusConflict, code, body)
}

// TestConsoleJSONIsNotHTMLEscaped: the console's JSON API prints a held
// version's reason and a source key with < > & as they are, as the CLI's
// --json does; it printed "20 -\u003e 2" (encoding/json's escaping for
// HTML, which JSON served as application/json needs not).
func TestConsoleJSONIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	path := filepath.Join(t.TempDir(), "a&b <c>.geojson")
	require.NoError(t, os.WriteFile(path, []byte(squares(20)), 0o644))
	code, out, errOut := run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)
	require.NoError(t, os.WriteFile(path, []byte(squares(2)), 0o644))
	code, out, errOut = run(t, env, "ingest", path)
	require.Equal(t, exitPending, code, out+errOut)
	base := startConsole(t, env)
	c := consoleClient{t: t, base: base}
	code, body := c.do(http.MethodGet, "/api/pending", nil, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "(20 -> 2; threshold 20%)")
	require.Contains(t, body, "a&b <c>.geojson")
	require.NotContains(t, body, `\u003`)
	require.NotContains(t, body, `\u0026`)
}
