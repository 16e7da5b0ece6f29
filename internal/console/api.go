package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// jobQuery reads a JobQuery from the request's query string: state,
// source, target, since (RFC 3339, a date, or a duration back from now
// such as 24h), limit and cursor. A value that does not parse is a
// Permanent error naming it.
func jobQuery(v url.Values, now time.Time) (ingest.JobQuery, error) {
	q := ingest.JobQuery{State: strings.TrimSpace(v.Get("state")), Source: v.Get("source"),
		Target: strings.TrimSpace(v.Get("target")), Cursor: v.Get("cursor")}
	var err error
	if q.Since, err = parseSince(v.Get("since"), now); err != nil {
		return q, err
	}
	if q.Limit, err = parseLimit(v.Get("limit")); err != nil {
		return q, err
	}
	return q, q.Validate()
}

// parseSince reads a since filter: "" (none), or a time back as every
// command's --since reads it (ingest.ParseSince: an RFC 3339 time, a
// date, or a duration back from now).
func parseSince(s string, now time.Time) (time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return time.Time{}, nil
	}
	t, err := ingest.ParseSince(s, now)
	if err != nil {
		return time.Time{}, ingest.Permanentf("since %v", err)
	}
	return t, nil
}

func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, ingest.Permanentf("limit %q: want a positive whole number (at most %d)", s, ingest.MaxPage)
	}
	return n, nil
}

// writeJSON writes v as indented JSON, as the CLI's --json does: <, >
// and & as they are (a guard's reason "10000 -> 10", a key "a&b"), not
// \u003e. Escaping them guards JSON pasted into a page; this is served
// as application/json with nosniff and a CSP that runs no script, and
// the console's pages escape what they show themselves.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// status is the HTTP status of err: 404 for a job nobody claimed, 400 for
// a query the caller got wrong, 503 for the database.
func status(err error) int {
	switch {
	case errors.Is(err, ingest.ErrNoSuchJob):
		return http.StatusNotFound
	case ingest.KindOf(err) == ingest.Permanent:
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

func (h *Handler) apiError(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code >= 500 {
		h.opts.Log.Warn("console", "path", r.URL.Path, "error", err.Error())
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func (h *Handler) apiJobs(w http.ResponseWriter, r *http.Request) {
	q, err := jobQuery(r.URL.Query(), time.Now())
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	page, err := h.opts.Reader.ConsoleJobs(r.Context(), q)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// apiFailures is /api/jobs with state failed: each job with its reason
// and hint.
func (h *Handler) apiFailures(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	v.Set("state", ingest.StateFailed)
	q, err := jobQuery(v, time.Now())
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	page, err := h.opts.Reader.ConsoleJobs(r.Context(), q)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (h *Handler) apiJob(w http.ResponseWriter, r *http.Request) {
	rec, err := h.opts.Reader.ConsoleJob(r.Context(), r.PathValue("job_id"))
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (h *Handler) apiSources(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := ingest.SourceQuery{Source: v.Get("source"), Target: strings.TrimSpace(v.Get("target")), Cursor: v.Get("cursor")}
	var err error
	if q.Limit, err = parseLimit(v.Get("limit")); err == nil {
		q.History, err = parseLimit(v.Get("history"))
	}
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	page, err := h.opts.Reader.ConsoleSources(r.Context(), q)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (h *Handler) apiClaims(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	cs, err := h.opts.Reader.ConsoleClaims(r.Context(), limit)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"claims": cs})
}

// overview is /api/overview: the reader's overview and the dead-letter
// queue's depth where known.
type overview struct {
	ingest.Overview
	DeadLetterDepth *int64 `json:"dead_letter_depth"`
	// Replica is the read database's replication state when the console
	// reads a replica (--read-database-url); absent on the primary.
	Replica *ingest.ReplicaStatus `json:"replica,omitempty"`
}

func (h *Handler) apiOverview(w http.ResponseWriter, r *http.Request) {
	o, err := h.opts.Reader.ConsoleOverview(r.Context())
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, overview{Overview: o, DeadLetterDepth: h.depth(r.Context()), Replica: h.replica(r.Context())})
}
