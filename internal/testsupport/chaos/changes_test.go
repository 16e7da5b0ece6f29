package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// changeHook is the serves' change webhook (serve --webhook): a receiver
// on 127.0.0.1 that refuses a fifth of the POSTs (503), at random, and
// keeps the bodies it acknowledged per Idempotency-Key. The serves are
// SIGKILLed while they deliver, PostgreSQL restarts under them: every
// change record must still arrive at least once, the same body each time.
type changeHook struct {
	url string

	mu      sync.Mutex
	rng     *rand.Rand
	posts   int
	refused int
	bodies  map[string][]string
}

func newChangeHook(t *testing.T, seed uint64) *changeHook {
	h := &changeHook{rng: rand.New(rand.NewPCG(seed, 5)), bodies: map[string][]string{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.posts++
		if h.rng.IntN(5) == 0 {
			h.refused++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		k := r.Header.Get("Idempotency-Key")
		h.bodies[k] = append(h.bodies[k], string(b))
	}))
	t.Cleanup(ts.Close)
	h.url = ts.URL + "/changes"
	return h
}

// awaitChanges waits, at most limit, until the webhook's durable cursor
// has passed every change record. A serve SIGKILLed while it held the
// subscriber's lease keeps it for a minute (the webhook's lease): the
// lease is ended here, as that minute would, so that a live serve takes
// over. It reports whether the cursor got there.
func awaitChanges(ctx context.Context, pool *pgxpool.Pool, limit time.Duration) bool {
	if _, err := pool.Exec(ctx, `UPDATE change_subscribers SET lease_until = now()`); err != nil {
		return false
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var behind int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_changes
			WHERE xid > coalesce((SELECT max(cursor) FROM change_subscribers), '0')`).Scan(&behind); err == nil && behind == 0 {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// checkChanges checks the change records' two downstream guarantees after
// the chaos: every record delivered by the webhook at least once, the same
// body each time; and the history, each row a version retired in it
// exactly once, by a committed version (one with its change record), as
// many as that version retired. It returns what it found, and what is
// wrong.
func checkChanges(ctx context.Context, pool *pgxpool.Pool, h *changeHook) (found string, wrong []string) {
	q := func(sql string) int64 {
		var n int64
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			wrong = append(wrong, fmt.Sprintf("%s: %v", sql, err))
		}
		return n
	}
	rows, err := pool.Query(ctx, `SELECT job_id FROM job_changes`)
	if err != nil {
		return "", []string{err.Error()}
	}
	var jobs []string
	for rows.Next() {
		var j string
		if err := rows.Scan(&j); err == nil {
			jobs = append(jobs, j)
		}
	}
	rows.Close()
	h.mu.Lock()
	undelivered, twice, differ := 0, 0, 0
	for _, j := range jobs {
		bs := h.bodies[j]
		if len(bs) == 0 {
			undelivered++
			if undelivered <= 5 {
				wrong = append(wrong, fmt.Sprintf("the change record of %s was never delivered", j))
			}
		}
		if len(bs) > 1 {
			twice++
		}
		for _, b := range bs {
			if b != bs[0] {
				differ++
				wrong = append(wrong, fmt.Sprintf("the change record of %s was delivered with two bodies", j))
				break
			}
		}
	}
	posts, refused := h.posts, h.refused
	h.mu.Unlock()
	if undelivered > 0 {
		wrong = append(wrong, fmt.Sprintf("%d of %d change records never delivered", undelivered, len(jobs)))
	}

	historyRows := q(`SELECT count(*) FROM geoingest_history()`)
	dup := q(`SELECT count(*) FROM (SELECT 1 FROM geoingest_history() GROUP BY retired_by, feature_id HAVING count(*) > 1) d`)
	orphan := q(`SELECT count(*) FROM geoingest_history() h WHERE NOT EXISTS (SELECT 1 FROM job_changes c WHERE c.job_id = h.retired_by)`)
	// A version retires its base's rows that it does not keep in place:
	// all of them when it rewrites the generation or retires it, the
	// changed and removed ones when it changes it in place.
	badCount := q(`SELECT count(*) FROM job_changes c JOIN jobs b ON b.job_id = c.base_job_id,
		LATERAL (SELECT count(*) AS n FROM geoingest_history_rows(c.job_id, c.target_table) h) h
		WHERE h.n NOT IN (b.feature_count, b.feature_count - c.unchanged)`)
	checked := q(`SELECT count(*) FROM job_changes c JOIN jobs b ON b.job_id = c.base_job_id`)
	if dup != 0 || orphan != 0 || badCount != 0 {
		wrong = append(wrong, fmt.Sprintf("history: %d rows retired twice by one version, %d retired by a version without a change record, %d versions whose history is not the rows they retired",
			dup, orphan, badCount))
	}
	found = fmt.Sprintf("webhook: %d change records, every one delivered: %v (%d twice or more, %d with differing bodies); %d POSTs, %d refused (503)\n"+
		"history:        %d rows; %d versions' retired rows checked against their base: %d wrong; %d rows twice, %d of an uncommitted version",
		len(jobs), undelivered == 0, twice, differ, posts, refused, historyRows, checked, badCount, dup, orphan)
	return found, wrong
}
