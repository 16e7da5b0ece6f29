package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// hookReceiver is a webhook receiver on 127.0.0.1 that keeps every
// attempt, and answers 503 while down (and to a POST whose signature
// does not verify).
type hookReceiver struct {
	secret []byte
	mu     sync.Mutex
	down   bool
	posts  []hookPost
	ok     map[string]int // 2xx answers per key
}

type hookPost struct {
	key, body string
	signed    bool
	status    int
}

func newHookReceiver(t *testing.T, secret []byte) (*hookReceiver, string) {
	h := &hookReceiver{secret: secret, ok: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		signed := ingest.VerifyWebhook(h.secret, r.Header.Get("X-Geoingest-Signature"), b, time.Now(), 5*time.Minute)
		h.mu.Lock()
		defer h.mu.Unlock()
		status := http.StatusOK
		if h.down || !signed {
			status = http.StatusServiceUnavailable
		}
		h.posts = append(h.posts, hookPost{key: key, body: string(b), signed: signed, status: status})
		if status == http.StatusOK {
			h.ok[key]++
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return h, srv.URL + "/hook"
}

func (h *hookReceiver) delivered() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.ok {
		out[k] = v
	}
	return out
}

// recordedJobs is every job with a change record, each once: what a
// receiver that got each record once has delivered.
func recordedJobs(t *testing.T, db string) map[string]int {
	out := map[string]int{}
	for k := range queryPairs(t, db, `SELECT job_id, 0::bigint FROM job_changes`) {
		out[k] = 1
	}
	return out
}

// startFollow runs `geoingest changes --follow ARGS` until the test ends
// or stop is called.
func startFollow(t *testing.T, env map[string]string, args ...string) (stop func() string) {
	m := NewMain()
	stdout, stderr := &testfiles.SyncBuffer{}, &testfiles.SyncBuffer{}
	m.Stdout, m.Stderr = stdout, stderr
	m.Getenv = func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, append([]string{"changes", "--follow"}, args...)) }()
	var once sync.Once
	stop = func() string {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				require.Equal(t, 0, code, stderr.String())
			case <-time.After(30 * time.Second):
				t.Errorf("changes --follow did not stop")
			}
		})
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestWebhookDeliversEveryChangeRecordOnce: serve, with a route's
// webhook= and expire-zoom= options, POSTs each version's change record
// to a receiver on 127.0.0.1, signed with HMAC. The receiver is down
// while three serves run (two versions, then the second dropped again: a
// redelivery, which adds no record). Its cursor is durable: once the
// receiver is up, `changes --follow --webhook` (the same subscriber, in
// another process) delivers what serve could not, with the same body and
// Idempotency-Key as serve's refused attempts, and no second distinct
// change set: the keys delivered are exactly the jobs with a change
// record.
func TestWebhookDeliversEveryChangeRecordOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	secret := []byte("s3cret")
	recv, hook := newHookReceiver(t, secret)
	recv.down = true
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_WEBHOOK_SECRET": string(secret)}
	dir := t.TempDir()
	path := filepath.Join(dir, "grid.geojson")
	var ids []int
	for i := 0; i < 300; i++ {
		ids = append(ids, i)
	}
	route := "=parcels?key=@id&webhook=" + url.QueryEscape(hook) + "&expire-zoom=12-14"
	serve := func() {
		code, out, errOut := run(t, env, "serve", "--inbox", dir, "--metrics-addr", "", "--route", route,
			"--poll", "100ms", "--settle", "300ms", "--until-idle", "2s")
		require.Equal(t, 0, code, errOut)
		t.Log(out)
	}
	require.NoError(t, os.WriteFile(path, idVersion(ids, false, nil, nil), 0o644))
	serve()
	require.NoError(t, os.WriteFile(path, idVersion(ids[10:], false, map[int]bool{20: true}, map[int]bool{30: true}), 0o644))
	serve()
	// The same version again (a redelivery: the same bytes, a new mtime).
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	serve()

	var jobs []string
	for k := range queryPairs(t, db, `SELECT job_id, 0::bigint FROM job_changes`) {
		jobs = append(jobs, k)
	}
	require.Len(t, jobs, 2, "two versions, two change records: the redelivery recorded none")

	recv.mu.Lock()
	require.NotEmpty(t, recv.posts, "serve tried to deliver")
	require.Empty(t, recv.ok)
	recv.down = false
	recv.mu.Unlock()
	stop := startFollow(t, env, "--webhook", hook, "--expire-zoom", "12-14", "--poll", "100ms")
	eventually(t, 2*time.Minute, "every change record delivered", func() bool { return len(recv.delivered()) == len(jobs) })
	stop()

	got := recv.delivered()
	require.Len(t, got, 2)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	bodies := map[string]string{}
	attempts := map[string]int{}
	for _, p := range recv.posts {
		require.True(t, p.signed, "every POST is signed")
		require.Contains(t, jobs, p.key)
		if b, ok := bodies[p.key]; ok {
			require.Equal(t, b, p.body, "every delivery of a record is the same body")
		}
		bodies[p.key] = p.body
		attempts[p.key]++
	}
	require.GreaterOrEqual(t, attempts[recv.posts[0].key], 2, "serve's refused attempt was delivered again by the next process")
	for _, j := range jobs {
		require.GreaterOrEqual(t, got[j], 1)
		var pl struct {
			Event  string           `json:"event"`
			Job    string           `json:"job"`
			Base   string           `json:"base_job"`
			Counts map[string]int64 `json:"counts"`
			Tiles  *struct {
				MinZoom int               `json:"min_zoom"`
				Tiles   []json.RawMessage `json:"tiles"`
			} `json:"expired_tiles"`
		}
		require.NoError(t, json.Unmarshal([]byte(bodies[j]), &pl))
		require.Equal(t, "changes", pl.Event)
		require.Equal(t, j, pl.Job)
		require.NotNil(t, pl.Tiles, "the route's expire-zoom puts the tiles in the payload")
		require.Equal(t, 12, pl.Tiles.MinZoom)
		require.NotEmpty(t, pl.Tiles.Tiles)
		if pl.Base != "" {
			require.Equal(t, map[string]int64{"added": 0, "removed": 10, "geometry": 1, "attributes": 1, "unchanged": 288}, pl.Counts)
		}
	}
	require.EqualValues(t, 2, queryInt(t, db, `SELECT delivered FROM change_subscribers`))
}

// TestServeIdleStopDeliversWebhooks: `serve --until-idle` that stops
// before its deliverer's next poll (2 s) still delivers what it committed:
// the idle stop makes a last webhook pass. Without it, the record waits in
// the feed for the next process.
func TestServeIdleStopDeliversWebhooks(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	recv, hook := newHookReceiver(t, []byte("k"))
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_WEBHOOK_SECRET": "k"}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid.geojson"), idVersion([]int{1, 2, 3}, false, nil, nil), 0o644))
	code, out, errOut := run(t, env, "serve", "--inbox", dir, "--metrics-addr", "", "--route", "=parcels?key=@id",
		"--webhook", hook, "--poll", "50ms", "--settle", "100ms", "--until-idle", "200ms")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 written")
	jobs := recordedJobs(t, db)
	require.Len(t, jobs, 1)
	require.Equal(t, jobs, recv.delivered(), "delivered before serve returned")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT delivered FROM change_subscribers`))
}

// TestIngestDeliversWebhooks: `ingest --webhook` POSTs each version's
// change record, signed, before it exits, each once across two runs (the
// subscriber's cursor is durable). With the receiver down, the run still
// exits 0 (its jobs committed) and says on stderr that the records wait at
// the cursor; the next run delivers them with its own.
func TestIngestDeliversWebhooks(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	recv, hook := newHookReceiver(t, []byte("k"))
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_WEBHOOK_SECRET": "k"}
	dir := t.TempDir()
	src := filepath.Join(dir, "grid.geojson")
	version := func(ids []int, moved map[int]bool) {
		require.NoError(t, os.WriteFile(src, idVersion(ids, false, moved, nil), 0o644))
	}
	jobs := func() map[string]int { return recordedJobs(t, db) }

	version([]int{1, 2, 3}, nil)
	code, _, errOut := run(t, env, "ingest", "--key", "@id", "--webhook", hook, src)
	require.Equal(t, 0, code, errOut)
	require.Len(t, jobs(), 1)
	require.Equal(t, jobs(), recv.delivered(), "the first version's record, delivered before ingest returned")

	version([]int{1, 2, 4}, map[int]bool{1: true})
	code, _, errOut = run(t, env, "ingest", "--key", "@id", "--webhook", hook, src)
	require.Equal(t, 0, code, errOut)
	require.Len(t, jobs(), 2)
	require.Equal(t, jobs(), recv.delivered(), "each record once: the cursor kept the first")

	recv.mu.Lock()
	recv.down = true
	recv.mu.Unlock()
	version([]int{1, 4, 5}, nil)
	code, _, errOut = run(t, env, "ingest", "--key", "@id", "--webhook", hook, src)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "left records undelivered")
	require.Len(t, jobs(), 3)
	require.Len(t, recv.delivered(), 2, "the receiver was down")

	recv.mu.Lock()
	recv.down = false
	recv.mu.Unlock()
	version([]int{1, 4, 5, 6}, nil)
	code, _, errOut = run(t, env, "ingest", "--key", "@id", "--webhook", hook, src)
	require.Equal(t, 0, code, errOut)
	require.Len(t, jobs(), 4)
	require.Equal(t, jobs(), recv.delivered(), "the refused record came with the next run's")
	require.EqualValues(t, 4, queryInt(t, db, `SELECT delivered FROM change_subscribers`))
}

// TestBackfillDeliversRouteWebhooks: backfill selects each webhook's
// records by its routes, as serve does: a route's webhook= takes its
// sources' records, and the --webhook URL gets none of them.
func TestBackfillDeliversRouteWebhooks(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	routed, routedURL := newHookReceiver(t, []byte("k"))
	other, otherURL := newHookReceiver(t, []byte("k"))
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_WEBHOOK_SECRET": "k"}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "county"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "county", "grid.geojson"), idVersion([]int{1, 2, 3}, false, nil, nil), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "town.geojson"), idVersion([]int{7, 8}, false, nil, nil), 0o644))
	code, out, errOut := run(t, env, "backfill", "--dir", dir, "--quiet",
		"--route", "county/=parcels?key=@id&webhook="+url.QueryEscape(routedURL), "--route", "=parcels?key=@id",
		"--webhook", otherURL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 written")
	// The local bucket's keys are the files' paths: each job found by its
	// file's name.
	jobs := queryPairs(t, db, `SELECT source_key || ' ' || job_id, 0::bigint FROM job_changes`)
	require.Len(t, jobs, 2)
	jobOf := func(file string) map[string]int {
		out := map[string]int{}
		for kj := range jobs {
			if key, job, _ := strings.Cut(kj, " "); strings.HasSuffix(key, file) {
				out[job] = 1
			}
		}
		require.Len(t, out, 1, file)
		return out
	}
	require.Equal(t, jobOf("grid.geojson"), routed.delivered())
	require.Equal(t, jobOf("town.geojson"), other.delivered())
}

// TestIngestWebhookWaitsForTheFeed: a transaction older than the job's,
// still running (another client's, on another database of the server),
// holds the job's record back from the feed (ChangeFeed serves only
// records older than every running transaction). ingest's last pass
// waits for it, and the record is delivered once that transaction ends,
// before ingest returns.
func TestIngestWebhookWaitsForTheFeed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	other := pgtest.NewDB(t)
	recv, hook := newHookReceiver(t, []byte("k"))
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_WEBHOOK_SECRET": "k"}
	src := filepath.Join(t.TempDir(), "grid.geojson")
	require.NoError(t, os.WriteFile(src, idVersion([]int{1, 2, 3}, false, nil, nil), 0o644))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, other)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	var xid string
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid))
	const hold = 8 * time.Second
	go func() {
		time.Sleep(hold)
		_ = tx.Commit(ctx)
	}()
	start := time.Now()
	code, _, errOut := run(t, env, "ingest", "--key", "@id", "--webhook", hook, src)
	took := time.Since(start)
	require.Equal(t, 0, code, errOut)
	jobs := recordedJobs(t, db)
	require.Len(t, jobs, 1)
	require.Equal(t, jobs, recv.delivered(), "delivered before ingest returned (%s; the older transaction %s ended after %s)", took, xid, hold)
}
