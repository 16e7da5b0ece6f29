package console

import (
	"context"
	"net/http"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// reportWait bounds one area report of the API: a whole report of the
// current generations, or one rebuilt from the history.
const reportWait = 60 * time.Second

// apiReportArea is GET /api/report/area: the area report, as `geoingest
// report area --format json` prints it, of the current generations, or
// with as_of (an RFC 3339 time, a date or a duration back from now, as
// --as-of) the report as it was then, from the history (docs/reports.md,
// "As of a time"). method, admin_key (default the console's
// --admin-key) and pipeline_version as the command's flags. The console
// refreshes no report assignments (it is read-only): the report computes
// what they lack. A time before the retained history is a 400.
func (h *Handler) apiReportArea(w http.ResponseWriter, r *http.Request) {
	if h.opts.Reports == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this console makes no reports"})
		return
	}
	v := r.URL.Query()
	q := ingest.AreaQuery{Method: v.Get("method"), AdminKey: v.Get("admin_key"), PipelineVersion: v.Get("pipeline_version")}
	if q.AdminKey == "" {
		q.AdminKey = h.opts.AdminKey
	}
	if s := v.Get("as_of"); s != "" {
		at, err := parseSince(s, time.Now())
		if err != nil {
			h.apiError(w, r, ingest.Permanentf("as_of %q: want an RFC 3339 time, a date (2006-01-02) or a duration back from now (720h)", s))
			return
		}
		q.AsOf = at
	}
	if err := q.Validate(); err != nil {
		h.apiError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), reportWait)
	defer cancel()
	rep, err := h.opts.Reports.AreaReport(ctx, q)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
