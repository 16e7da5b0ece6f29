package console

import (
	"errors"
	"net/http"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// The change records in the JSON API (docs/changes.md):
//
//   - GET /api/jobs/{job_id}/changes: the job's record (counts, matched,
//     duplicate_keys, lineage, bbox, cursor) and its changed features;
//   - GET /api/changes?source=s3://BUCKET/KEY[&since=24h]: a source's
//     records, oldest first;
//   - GET /api/changes/feed?after=CURSOR[&limit=N]: the change feed, the
//     records committed after the cursor, with the cursor to resume
//     after; at least once, the job id as the idempotency key.

func (h *Handler) changes(w http.ResponseWriter, r *http.Request) (ingest.ChangeLog, bool) {
	if h.opts.Changes == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this console keeps no change records"})
		return nil, false
	}
	return h.opts.Changes, true
}

func (h *Handler) apiJobChanges(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.changes(w, r)
	if !ok {
		return
	}
	c, feats, err := cl.JobChanges(r.Context(), r.PathValue("job_id"), true)
	if errors.Is(err, ingest.ErrNoChanges) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	if feats == nil {
		feats = []ingest.FeatureChange{}
	}
	writeJSON(w, http.StatusOK, struct {
		ingest.Changes
		Features []ingest.FeatureChange `json:"features"`
	}{c, feats})
}

func (h *Handler) apiSourceChanges(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.changes(w, r)
	if !ok {
		return
	}
	v := r.URL.Query()
	bucket, key := ingest.ParseSourcePrefix(v.Get("source"))
	if bucket == "" || key == "" {
		h.apiError(w, r, ingest.Permanentf("source %q: want s3://BUCKET/KEY, gs://BUCKET/KEY, azblob://CONTAINER/KEY or file:///PATH", v.Get("source")))
		return
	}
	since, err := parseSince(v.Get("since"), time.Now())
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	cs, err := cl.SourceChanges(r.Context(), bucket, key, since)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	if len(cs) == 0 {
		// A source no job ever named (a mistyped URL) is a 404 naming
		// it, not an empty answer, as for `geoingest changes SOURCE`.
		if l, ok := cl.(ingest.SourceLookup); ok {
			known, err := l.SourceKnown(r.Context(), bucket, key)
			if err != nil {
				h.apiError(w, r, err)
				return
			}
			if !known {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "no job was ever recorded for source " +
					v.Get("source") + ": /api/sources lists the sources"})
				return
			}
		}
		cs = []ingest.Changes{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"changes": cs})
}

func (h *Handler) apiChangeFeed(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.changes(w, r)
	if !ok {
		return
	}
	v := r.URL.Query()
	limit, err := parseLimit(v.Get("limit"))
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	if limit == 0 || limit > ingest.MaxPage {
		limit = ingest.MaxPage
	}
	after := v.Get("after")
	cs, err := cl.ChangeFeed(r.Context(), after, limit)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	cursor := after
	if len(cs) > 0 {
		cursor = cs[len(cs)-1].Cursor
	}
	if cs == nil {
		cs = []ingest.Changes{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"changes": cs, "cursor": cursor})
}
