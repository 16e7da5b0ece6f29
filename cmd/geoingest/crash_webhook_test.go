package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

// heldReceiver is a webhook receiver on 127.0.0.1 that counts the 2xx
// answers per Idempotency-Key and keeps each key's bodies; while down it
// answers 503, and with hold set it holds the next POST unanswered (held
// is closed when it arrives) until the test lets it go.
type heldReceiver struct {
	mu     sync.Mutex
	down   bool
	hold   bool
	held   chan struct{}
	let    chan struct{}
	ok     map[string]int
	bodies map[string][]string
}

func newHeldReceiver(t *testing.T) (*heldReceiver, string) {
	h := &heldReceiver{ok: map[string]int{}, bodies: map[string][]string{}, held: make(chan struct{}), let: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		h.mu.Lock()
		if h.hold {
			h.hold = false
			h.mu.Unlock()
			close(h.held)
			<-h.let // the sender is killed meanwhile: this answer reaches no one
			return
		}
		defer h.mu.Unlock()
		if h.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ok[key]++
		h.bodies[key] = append(h.bodies[key], string(b))
	}))
	t.Cleanup(func() {
		select {
		case <-h.let:
		default:
			close(h.let)
		}
		srv.Close()
	})
	return h, srv.URL + "/hook"
}

func (h *heldReceiver) delivered() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.ok {
		out[k] = v
	}
	return out
}

// TestServeCrashWhileDeliveringWebhook kills `geoingest serve` with
// SIGKILL while its webhook delivers two change records: with the
// records after the durable cursor read and nothing POSTed
// (webhook-after-read); with the first record's POST answered 2xx and the
// cursor not yet moved past it (webhook-after-post); and with a POST in
// flight, the receiver holding it unanswered (mid-post). Each time the
// cursor has not moved past a record the receiver has not acknowledged
// (it never skips), and the next serve (once the dead one's lease has run
// out) delivers every change record at least once, the same body each
// time, and moves the cursor to the last record. After webhook-after-post
// the first record is delivered twice: at least once, never lost.
func TestServeCrashWhileDeliveringWebhook(t *testing.T) {
	t.Parallel()
	for _, point := range []string{ingest.HookWebhookAfterRead, ingest.HookWebhookAfterPost, "mid-post"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			env := map[string]string{"DATABASE_URL": db}
			recv, hook := newHeldReceiver(t)
			recv.down = true
			dir := t.TempDir()
			path := filepath.Join(dir, "grid.geojson")
			var ids []int
			for i := 0; i < 60; i++ {
				ids = append(ids, i)
			}
			route := "=parcels?key=@id&webhook=" + url.QueryEscape(hook)
			args := []string{"serve", "--inbox", dir, "--metrics-addr", "", "--route", route, "--poll", "100ms", "--settle", "300ms"}
			// Two versions, written while the receiver is down: two
			// change records, neither delivered.
			for v, fc := range [][]byte{idVersion(ids, false, nil, nil), idVersion(ids[5:], false, map[int]bool{20: true}, map[int]bool{30: true})} {
				require.NoError(t, os.WriteFile(path, fc, 0o644))
				code, _, errOut := run(t, env, append(args, "--until-idle", "2s")...)
				require.Equal(t, 0, code, "version %d: %s", v+1, errOut)
			}
			jobs := queryPairs(t, db, `SELECT job_id, 0::bigint FROM job_changes`)
			require.Len(t, jobs, 2)
			require.EqualValues(t, 0, queryInt(t, db, `SELECT cursor::text::bigint FROM change_subscribers`))

			recv.mu.Lock()
			recv.down = false
			recv.hold = point == "mid-post"
			recv.mu.Unlock()
			var extra []string
			if point != "mid-post" {
				extra = []string{"GEOINGEST_TEST_CRASH_AT=" + point}
			}
			a := subprocess(t, db, extra, args...)
			if point == "mid-post" {
				select {
				case <-recv.held:
				case <-time.After(90 * time.Second):
					t.Fatalf("serve never POSTed:\n%s", a.stderr.String())
				}
				a.kill()
			} else {
				select {
				case <-a.exited:
				case <-time.After(90 * time.Second):
					t.Fatalf("serve never reached %s:\n%s", point, a.stderr.String())
				}
			}
			require.True(t, a.killed(), "serve died of SIGKILL at %s:\n%s", point, a.stderr.String())
			got := recv.delivered()
			want := map[string]int{}
			if point == ingest.HookWebhookAfterPost {
				require.Len(t, got, 1, "the first record was acknowledged before the kill")
				want = got
			} else {
				require.Empty(t, got)
			}
			// The cursor never skips: every record at or before it was
			// acknowledged.
			for j := range queryPairs(t, db, `SELECT job_id, 0::bigint FROM job_changes
				WHERE xid <= (SELECT cursor FROM change_subscribers)`) {
				require.Contains(t, got, j, "the cursor moved past %s, which no one acknowledged", j)
			}

			// The dead serve's lease runs out (here at once), and the next
			// serve delivers the rest.
			execSQL(t, db, `UPDATE change_subscribers SET lease_until = now() - interval '1 second'`)
			b := subprocess(t, db, nil, args...)
			eventually(t, 90*time.Second, "every change record delivered", func() bool { return len(recv.delivered()) == 2 })
			eventually(t, 30*time.Second, "the cursor at the last record", func() bool {
				return queryInt(t, db, `SELECT (SELECT cursor::text::bigint FROM change_subscribers) - (SELECT max(xid)::text::bigint FROM job_changes)`) == 0
			})
			b.stop(t)
			got = recv.delivered()
			for j := range jobs {
				require.Equal(t, want[j]+1, got[j], "%s: delivered at least once, once more after the crash if it had been", j)
				recv.mu.Lock()
				for _, body := range recv.bodies[j] {
					require.Equal(t, recv.bodies[j][0], body, "the same body")
				}
				recv.mu.Unlock()
			}
			require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM job_changes`), "no record added by the restarts")
		})
	}
}

// subprocess starts the test build of geoingest with args, on database
// db, with extra environment (testhook variables).
func subprocess(t *testing.T, db string, extraEnv []string, args ...string) *worker {
	t.Helper()
	w := &worker{cmd: exec.Command(binary, args...), stderr: &testfiles.SyncBuffer{}, stdout: &testfiles.SyncBuffer{},
		exited: make(chan struct{})}
	w.cmd.Env = append(append(os.Environ(), "DATABASE_URL="+db, "GEOINGEST_HOME="+t.TempDir(),
		"GEOINGEST_TEST_CRASH_AT=", "GEOINGEST_TEST_PAUSE_AT=", "GEOINGEST_WEBHOOK=", "GEOINGEST_WEBHOOK_SECRET="), extraEnv...)
	w.cmd.Stderr, w.cmd.Stdout = w.stderr, w.stdout
	require.NoError(t, w.cmd.Start())
	go func() { _ = w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("%v:\n%s", args, w.stderr.String())
		}
	})
	return w
}
