package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/reportsvg"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the console's templates, parsed on the first page rendered:
// every geoingest process links the console, and parsing at start-up would
// cost each one (an ingest, a worker) the template parser's code and
// some 140 KB of heap that only the console uses.
var pages = sync.OnceValue(parsePages)

func parsePages() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"ago":       ago,
		"ts":        ts,
		"area":      formatArea,
		"num":       formatInt,
		"short":     short,
		"seconds":   formatSeconds,
		"lease":     formatLease,
		"badge":     badge,
		"jobURL":    func(id string) string { return "/jobs/" + url.PathEscape(id) },
		"sourceURL": func(s string) string { return "/?" + url.Values{"source": {s}}.Encode() },
		"stateURL":  func(s string) string { return "/?" + url.Values{"state": {s}}.Encode() },
		"deref":     func(p *int64) int64 { return *p },
		"lag":       func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" },
		"pretty":    prettyJSON,
	}).ParseFS(templateFS, "templates/*.html"))
}

// indexData is what the index page shows.
type indexData struct {
	Now       time.Time
	Overview  ingest.Overview
	DLQ       *int64
	Replica   *ingest.ReplicaStatus
	Filter    filterForm
	States    []string
	Targets   []string
	Jobs      ingest.JobPage
	NextURL   string
	Failures  []ingest.JobSummary
	Claims    []ingest.ClaimInfo
	Sources   []ingest.SourceSummary
	MoreSrc   bool
	Map       bool
	Errors    []string
	StateList []stateCount
}

type filterForm struct {
	State, Source, Target, Since string
	Limit                        int
	Active                       bool
}

type stateCount struct {
	State string
	Jobs  int64
}

// The index page's sections show at most this many rows each (the jobs
// table pages on).
const (
	indexFailures = 10
	indexClaims   = 20
	indexSources  = 20
)

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := r.URL.Query()
	d := indexData{Now: time.Now(), States: ingest.JobStates, Targets: ingest.Targets, Map: h.opts.Reports != nil,
		Filter: filterForm{State: v.Get("state"), Source: v.Get("source"), Target: v.Get("target"), Since: v.Get("since")}}
	d.Filter.Active = d.Filter.State != "" || d.Filter.Source != "" || d.Filter.Target != "" || d.Filter.Since != ""
	fail := func(what string, err error) {
		h.opts.Log.Warn("console", "section", what, "error", err.Error())
		d.Errors = append(d.Errors, what+": "+err.Error())
	}
	var err error
	if d.Overview, err = h.opts.Reader.ConsoleOverview(ctx); err != nil {
		fail("overview", err)
	} else {
		d.Now = d.Overview.Now
		for _, s := range ingest.JobStates {
			if n := d.Overview.States[s]; n > 0 {
				d.StateList = append(d.StateList, stateCount{s, n})
			}
		}
	}
	d.DLQ = h.depth(ctx)
	d.Replica = h.replica(ctx)
	if q, err := jobQuery(v, d.Now); err != nil {
		fail("filter", err)
	} else if d.Jobs, err = h.opts.Reader.ConsoleJobs(ctx, q); err != nil {
		fail("jobs", err)
	} else if d.Jobs.Next != "" {
		next := url.Values{}
		for k, vs := range v {
			if k != "cursor" && len(vs) > 0 && vs[0] != "" {
				next.Set(k, vs[0])
			}
		}
		next.Set("cursor", d.Jobs.Next)
		d.NextURL = "/?" + next.Encode()
	}
	if f, err := h.opts.Reader.ConsoleJobs(ctx, ingest.JobQuery{State: ingest.StateFailed, Limit: indexFailures}); err != nil {
		fail("failures", err)
	} else {
		d.Failures = f.Jobs
	}
	if d.Claims, err = h.opts.Reader.ConsoleClaims(ctx, indexClaims); err != nil {
		fail("claims", err)
	}
	if s, err := h.opts.Reader.ConsoleSources(ctx, ingest.SourceQuery{Limit: indexSources}); err != nil {
		fail("sources", err)
	} else {
		d.Sources, d.MoreSrc = s.Sources, s.Next != ""
	}
	h.render(w, "index.html", d)
}

// jobData is what a job's page shows.
type jobData struct {
	Now time.Time
	Rec ingest.JobRecord
	// Retry: the viewer is an operator and the console can re-drive
	// the failed job's dead letters; CSRF is the form's token.
	Retry bool
	CSRF  string
	Done  string // what the last action did
	// Timeline and Map: the source's versions and the job's changes
	// (versions.go); nil: none.
	Timeline *timeline
	Map      *changeMap
	Errors   []string
}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	rec, err := h.opts.Reader.ConsoleJob(r.Context(), r.PathValue("job_id"))
	if err != nil {
		code := status(err)
		if code >= 500 {
			h.opts.Log.Warn("console", "path", r.URL.Path, "error", err.Error())
		}
		http.Error(w, err.Error(), code)
		return
	}
	d := jobData{Now: time.Now(), Rec: rec, Done: r.URL.Query().Get("done")}
	if rec.Job.State == ingest.StateFailed && h.opts.DeadLetterBox != nil && h.canAct() && h.roleOf(r) == roleOperator {
		d.Retry, d.CSRF = true, h.csrfToken()
	}
	if d.Timeline, err = h.sourceTimeline(r.Context(), rec); err != nil {
		h.opts.Log.Warn("console", "section", "versions", "error", err.Error())
		d.Errors = append(d.Errors, "versions: "+err.Error())
	}
	if d.Map, err = h.jobChangeMap(r.Context(), rec.Job.JobID); err != nil {
		h.opts.Log.Warn("console", "section", "changes map", "error", err.Error())
		d.Errors = append(d.Errors, "changes map: "+err.Error())
	}
	h.render(w, "job.html", d)
}

// render executes a page into a buffer first, so that a template error
// is a 500, never half a page.
func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, data); err != nil {
		h.opts.Log.Error("console: render", "page", name, "error", err.Error())
		http.Error(w, "console: cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// errNoMap is the map's answer when no admin unit has a shape.
var errNoMap = errors.New("no admin units with a current generation: nothing to map")

// mapHandler serves the area map as SVG (ingest.Report's map), drawn at
// most once per MapTTL.
func (h *Handler) mapHandler(w http.ResponseWriter, r *http.Request) {
	if h.opts.Reports == nil {
		http.NotFound(w, r)
		return
	}
	svg, err := h.drawMap(r.Context())
	if errors.Is(err, errNoMap) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		h.opts.Log.Warn("console: map", "error", err.Error())
		http.Error(w, "map: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(svg)
}

func (h *Handler) drawMap(ctx context.Context) ([]byte, error) {
	h.mapMu.Lock()
	defer h.mapMu.Unlock()
	if !h.mapAt.IsZero() && time.Since(h.mapAt) < h.opts.MapTTL {
		return h.mapSVG, h.mapErr
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h.mapSVG, h.mapErr = nil, nil
	rep, err := h.opts.Reports.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodPointOnSurface, AdminKey: h.opts.AdminKey, Shapes: true})
	switch {
	case err != nil:
		// Not cached: the next request tries again.
		return nil, err
	case !hasShapes(rep):
		h.mapErr = errNoMap
	default:
		var buf bytes.Buffer
		if err := reportsvg.Write(&buf, rep); err != nil {
			return nil, err
		}
		h.mapSVG = buf.Bytes()
	}
	h.mapAt = time.Now()
	return h.mapSVG, h.mapErr
}

func hasShapes(r *ingest.Report) bool {
	for _, u := range r.Units {
		if u.UnitID != 0 && u.Path != "" {
			return true
		}
	}
	return false
}

// The template functions.

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "–"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func ts(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return "–"
		}
		return v.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if v == nil {
			return "–"
		}
		return v.UTC().Format("2006-01-02 15:04:05Z")
	}
	return fmt.Sprint(t)
}

// formatArea writes an area in m², ha or km², whichever reads best.
func formatArea(m2 float64) string {
	switch {
	case m2 == 0:
		return "–"
	case m2 < 10_000:
		return formatFloat(m2, 0) + " m²"
	case m2 < 10_000_000:
		return formatFloat(m2/10_000, 2) + " ha"
	}
	return formatFloat(m2/1_000_000, 2) + " km²"
}

func formatFloat(v float64, decimals int) string {
	s := fmt.Sprintf("%.*f", decimals, v)
	whole, frac, _ := strings.Cut(s, ".")
	n := 0
	fmt.Sscan(whole, &n)
	out := formatInt(int64(n))
	if frac != "" {
		out += "." + frac
	}
	return out
}

// formatInt groups digits by thousands with thin spaces.
func formatInt(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func formatSeconds(p *float64) string {
	if p == nil {
		return "–"
	}
	v := *p
	switch {
	case v < 1:
		return fmt.Sprintf("%d ms", int(math.Round(v*1000)))
	case v < 120:
		return fmt.Sprintf("%.1f s", v)
	}
	return (time.Duration(v) * time.Second).String()
}

func formatLease(c ingest.ClaimInfo) string {
	if c.LeaseLeftSeconds <= 0 {
		return "ended " + ago(c.LeaseUntil, time.Now())
	}
	return fmt.Sprintf("%s left", (time.Duration(c.LeaseLeftSeconds) * time.Second).String())
}

// badge is the CSS class of a state's badge.
func badge(state string) string {
	switch state {
	case ingest.StateFailed:
		return "b-failed"
	case ingest.StateInFlight:
		return "b-flight"
	case ingest.StateLeaseExpired:
		return "b-expired"
	case "current":
		return "b-current"
	}
	return "b-other"
}

func prettyJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
