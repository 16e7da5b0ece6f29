package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// The quarantine (ingest/quarantine.go): the features a policy left out
// of each job, read-only.
//
//   - GET /quarantine: the jobs with quarantined features, with their
//     counts by rule;
//   - GET /quarantine/{job_id}: a job's quarantined features (the first
//     MaxPage), with their reasons and attributes;
//   - GET /api/quarantine: the jobs, as JSON;
//   - GET /api/jobs/{job_id}/quarantine?after_layer=&after_index=&limit=:
//     a page of a job's features, as JSON, with the cursor of the next;
//     with format=csv or format=geojson, the whole quarantine as a file to
//     send back to the uploader.

func (h *Handler) quarantine(w http.ResponseWriter, r *http.Request) (ingest.Quarantine, bool) {
	if h.opts.Quarantine == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this console keeps no quarantine"})
		return nil, false
	}
	return h.opts.Quarantine, true
}

func (h *Handler) apiQuarantine(w http.ResponseWriter, r *http.Request) {
	q, ok := h.quarantine(w, r)
	if !ok {
		return
	}
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	js, err := q.QuarantinedJobs(r.Context(), limit)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	if js == nil {
		js = []ingest.QuarantineJob{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": js})
}

func (h *Handler) apiJobQuarantine(w http.ResponseWriter, r *http.Request) {
	q, ok := h.quarantine(w, r)
	if !ok {
		return
	}
	v, job := r.URL.Query(), r.PathValue("job_id")
	if f := v.Get("format"); f == "csv" || f == "geojson" {
		// The whole quarantine, as a file. An error after the first byte
		// can only cut it short.
		if _, err := q.QuarantinedFeatures(r.Context(), job, ingest.FirstQuarantinePage(1)); err != nil {
			h.apiError(w, r, err)
			return
		}
		ct := map[string]string{"csv": "text/csv; charset=utf-8", "geojson": "application/geo+json"}[f]
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", `attachment; filename="quarantine-`+safeName(job)+"."+f+`"`)
		if err := ingest.ExportQuarantine(r.Context(), w, q, job, f); err != nil {
			h.opts.Log.Warn("console: quarantine export", "job", job, "error", err.Error())
		}
		return
	} else if f != "" && f != "json" {
		h.apiError(w, r, ingest.Permanentf("format %q: want json, csv or geojson", f))
		return
	}
	limit, err := parseLimit(v.Get("limit"))
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	p := ingest.FirstQuarantinePage(limit)
	if s := v.Get("after_index"); s != "" {
		if p.AfterIndex, err = strconv.ParseInt(s, 10, 64); err != nil {
			h.apiError(w, r, ingest.Permanentf("after_index %q: want a number", s))
			return
		}
		p.AfterLayer = v.Get("after_layer")
	}
	feats, err := q.QuarantinedFeatures(r.Context(), job, p)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	out := map[string]any{"job_id": job, "features": feats}
	if feats == nil {
		out["features"] = []ingest.QuarantinedFeature{}
	}
	if n := len(feats); n > 0 && (limit == 0 && n == ingest.MaxPage || limit > 0 && n == limit) {
		out["next"] = map[string]any{"after_layer": feats[n-1].Layer, "after_index": feats[n-1].Index}
	}
	writeJSON(w, http.StatusOK, out)
}

// safeName keeps the letters, digits, '-' and '_' of s, for a file name.
func safeName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < 80; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b = append(b, c)
		}
	}
	return string(b)
}

type quarantineData struct {
	Now      time.Time
	Error    string
	Jobs     []ingest.QuarantineJob
	JobID    string
	Features []ingest.QuarantinedFeature
	More     bool
}

func (h *Handler) quarantinePage(w http.ResponseWriter, r *http.Request) {
	d := quarantineData{Now: time.Now()}
	if h.opts.Quarantine == nil {
		d.Error = "this console keeps no quarantine"
	} else if js, err := h.opts.Quarantine.QuarantinedJobs(r.Context(), 0); err != nil {
		d.Error = err.Error()
	} else {
		d.Jobs = js
	}
	h.render(w, "quarantine.html", d)
}

func (h *Handler) quarantineJobPage(w http.ResponseWriter, r *http.Request) {
	d := quarantineData{Now: time.Now(), JobID: r.PathValue("job_id")}
	if h.opts.Quarantine == nil {
		d.Error = "this console keeps no quarantine"
	} else if fs, err := h.opts.Quarantine.QuarantinedFeatures(r.Context(), d.JobID, ingest.FirstQuarantinePage(0)); err != nil {
		d.Error = err.Error()
		if status(err) == http.StatusNotFound {
			w.WriteHeader(http.StatusNotFound)
		}
	} else {
		d.Features, d.More = fs, len(fs) == ingest.MaxPage
	}
	h.render(w, "quarantine.html", d)
}
