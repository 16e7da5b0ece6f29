// Package console is geoingest's operator's console: server-rendered HTML
// pages (html/template, no JavaScript) and a JSON API over an
// ingest.ConsoleReader, read-only.
//
// Routes:
//
//	GET /                   recent jobs (filters, pages), failures, claims, sources, map
//	GET /jobs/{job_id}      one job: claim, ledger row, CRS record, source history
//	GET /map.svg            the area map of the current parcels by admin unit
//	GET /api/jobs           ?state=&source=&target=&since=&limit=&cursor=
//	GET /api/jobs/{job_id}  ingest.JobRecord
//	GET /api/sources        ?source=&target=&history=&limit=&cursor=
//	GET /api/failures       /api/jobs?state=failed, with the hint of each
//	GET /api/claims         the claims not yet settled
//	GET /api/overview       counts by state, last report refresh, DLQ depth
//	GET /pending            the pending versions, with approve and reject forms for operators
//	GET /login              asks a browser for the operator's credentials
//	GET /api/pending        the pending versions
//	POST /pending/{job_id}/{approve|reject}      a form (reason, csrf): operators
//	POST /api/pending/{job_id}/{approve|reject}  {"reason": "..."}: operators
//	GET /deadletters        the dead letters, with re-drive and delete forms for operators (deadletters.go)
//	GET /api/deadletters    the dead letters, with the failed jobs each names
//	POST /deadletters/{id}/{redrive|delete}      a form (csrf): operators
//	POST /api/deadletters/{id}/{redrive|delete}  operators
//	POST /jobs/{job_id}/retry                    a form (csrf): operators; re-drives the job's dead letters
//	POST /api/jobs/{job_id}/retry                operators
//	GET /quarantine         the jobs with quarantined features (quarantine.go)
//	GET /quarantine/{job_id}                    a job's quarantined features
//	GET /api/quarantine                         the jobs, as JSON
//	GET /api/jobs/{job_id}/quarantine           a page of them; ?format=csv|geojson: all, as a file
//	GET /api/jobs/{job_id}/changes              the job's change record and changed features (changes.go)
//	GET /api/jobs/{job_id}/tiles                the tiles its changes expire
//	GET /api/changes        ?source=&since=: a source's change records
//	GET /api/changes/feed   ?after=CURSOR&limit=: the change feed
//	GET /api/report/area    ?as_of=&method=&admin_key=&pipeline_version=: the area report, now or as of a time (report.go)
//
// Reading needs Options.Token (when set) or the operator token; acting
// needs Options.OperatorToken, and is protected from cross-site request
// forgery (actions.go).
//
// Every user-supplied string (source keys, failure reasons, owners) is
// rendered as text: html/template escapes it for its context, and the
// JSON encoder escapes <, > and &.
package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/queue"
)

// Reports makes the area report the map draws (postgis.Store).
type Reports interface {
	AreaReport(ctx context.Context, q ingest.AreaQuery) (*ingest.Report, error)
}

// Options configure the console.
type Options struct {
	// Reader is what the console reads. Required.
	Reader ingest.ConsoleReader
	// Reports draws the map and answers /api/report/area; nil for
	// neither.
	Reports Reports
	// AdminKey is the admin units' property that names them on the map
	// (default "name").
	AdminKey string
	// DeadLetters tells the dead-letter queue's depth; nil where it is
	// not known (an inbox, or the console without a queue).
	DeadLetters queue.DeadLetterDepther
	// Token, when set, is required as a bearer token (or as the password
	// of basic authentication, for browsers) on every route: the
	// read-only token.
	Token string
	// OperatorToken, when set, lets its bearer read and act: approve or
	// reject pending versions. Empty: the console is read-only.
	OperatorToken string
	// Pending lists the pending versions; nil: no pending page.
	Pending ingest.PendingVersions
	// Decider decides them (with OperatorToken).
	Decider Decider
	// Log receives request errors; nil for slog.Default().
	Log *slog.Logger
	// MapTTL is how long a drawn map is reused (default 30 s): the map is
	// a whole area report.
	MapTTL time.Duration
	// Replica, when set, is the replication state of the database the
	// console reads (a replica, --read-database-url): the pages and
	// /api/overview show how far behind the primary it is.
	Replica ingest.ReplicaLagger
	// Changes reads the change records (/api/jobs/{id}/changes,
	// /api/changes, /api/changes/feed); nil: those routes answer 404.
	Changes ingest.ChangeLog
	// DeadLetterBox reads and acts on the dead-letter queue: the dead
	// letters page, their re-drive and delete, and the retry of a failed
	// job (deadletters.go); nil where there is none that can be read.
	DeadLetterBox queue.DeadLetterBox
	// NoDeadLetters says why DeadLetterBox is nil, for the pages.
	NoDeadLetters string
	// Quarantine reads the features the policies left out (/quarantine,
	// /api/quarantine, /api/jobs/{id}/quarantine); nil: those routes
	// answer 404 or say so.
	Quarantine ingest.Quarantine
}

// Handler serves the console.
type Handler struct {
	opts    Options
	mux     *http.ServeMux
	csrfKey []byte // actions.go

	mapMu  sync.Mutex
	mapAt  time.Time
	mapSVG []byte
	mapErr error
}

// New returns the console's handler.
func New(o Options) *Handler {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.AdminKey == "" {
		o.AdminKey = "name"
	}
	if o.MapTTL <= 0 {
		o.MapTTL = 30 * time.Second
	}
	h := &Handler{opts: o, mux: http.NewServeMux(), csrfKey: newCSRFKey()}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.HandleFunc("GET /jobs/{job_id}", h.jobPage)
	h.mux.HandleFunc("GET /map.svg", h.mapHandler)
	h.mux.HandleFunc("GET /api/jobs", h.apiJobs)
	h.mux.HandleFunc("GET /api/jobs/{job_id}", h.apiJob)
	h.mux.HandleFunc("GET /api/sources", h.apiSources)
	h.mux.HandleFunc("GET /api/failures", h.apiFailures)
	h.mux.HandleFunc("GET /api/claims", h.apiClaims)
	h.mux.HandleFunc("GET /api/overview", h.apiOverview)
	h.mux.HandleFunc("GET /pending", h.pendingPage)
	h.mux.HandleFunc("GET /login", h.login)
	h.mux.HandleFunc("GET /api/pending", h.apiPending)
	h.mux.HandleFunc("POST /pending/{job_id}/{action}", h.pendingAction)
	h.mux.HandleFunc("POST /api/pending/{job_id}/{action}", h.apiDecide)
	h.mux.HandleFunc("GET /api/jobs/{job_id}/changes", h.apiJobChanges)
	h.mux.HandleFunc("GET /api/jobs/{job_id}/tiles", h.apiJobTiles)
	h.mux.HandleFunc("GET /api/changes", h.apiSourceChanges)
	h.mux.HandleFunc("GET /api/changes/feed", h.apiChangeFeed)
	h.mux.HandleFunc("GET /api/report/area", h.apiReportArea)
	h.mux.HandleFunc("GET /deadletters", h.deadLettersPage)
	h.mux.HandleFunc("GET /api/deadletters", h.apiDeadLetters)
	h.mux.HandleFunc("POST /deadletters/{id}/{action}", h.deadLetterForm)
	h.mux.HandleFunc("POST /api/deadletters/{id}/{action}", h.apiDeadLetterAction)
	h.mux.HandleFunc("POST /jobs/{job_id}/retry", h.retryForm)
	h.mux.HandleFunc("POST /api/jobs/{job_id}/retry", h.apiRetry)
	h.mux.HandleFunc("GET /quarantine", h.quarantinePage)
	h.mux.HandleFunc("GET /quarantine/{job_id}", h.quarantineJobPage)
	h.mux.HandleFunc("GET /api/quarantine", h.apiQuarantine)
	h.mux.HandleFunc("GET /api/jobs/{job_id}/quarantine", h.apiJobQuarantine)
	return h
}

// ServeHTTP checks the token, sets the security headers and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.roleOf(r) == roleNone {
		w.Header().Add("WWW-Authenticate", `Bearer realm="geoingest console"`)
		w.Header().Add("WWW-Authenticate", `Basic realm="geoingest console", charset="UTF-8"`)
		http.Error(w, "unauthorized: the console needs its token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
		return
	}
	hd := w.Header()
	// No script, no frame, nothing from elsewhere: the pages need only
	// their inline style and the map from this server.
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// Routes are the path patterns the console serves, for a mux that mounts
// it beside other handlers.
var Routes = []string{"/{$}", "/jobs/", "/map.svg", "/api/", "/pending", "/pending/", "/login", "/deadletters", "/deadletters/", "/quarantine", "/quarantine/"}

// replica is the read database's replication state, or nil when the
// console reads the primary (or the state cannot be read).
func (h *Handler) replica(ctx context.Context) *ingest.ReplicaStatus {
	if h.opts.Replica == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := h.opts.Replica.ReplicaLag(ctx)
	if err != nil {
		h.opts.Log.Warn("console: replica lag", "error", err.Error())
		return nil
	}
	return &st
}

// depth is the dead-letter queue's depth, or nil where unknown.
func (h *Handler) depth(ctx context.Context) *int64 {
	if h.opts.DeadLetters == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, err := h.opts.DeadLetters.DeadLetterDepth(ctx)
	if err != nil {
		if !errors.Is(err, queue.ErrNoDeadLetterQueue) {
			h.opts.Log.Warn("console: dead-letter depth", "error", err.Error())
		}
		return nil
	}
	return &n
}
