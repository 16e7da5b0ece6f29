package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// The console's actions: an operator approves or rejects a pending
// version (ingest.PendingVersions), retries a failed job, re-drives or
// deletes a dead letter (deadletters.go). Reading needs the read-only token
// (Options.Token) or the operator's (Options.OperatorToken); acting needs
// the operator's, and is off when there is none.
//
// Cross-site request forgery: a browser that knows the operator's basic
// credentials sends them with any request, also one a page elsewhere
// makes it send. So an action is done only for
//   - a request that carries the operator token in its own Authorization:
//     Bearer header (a script: a cross-site form cannot set that header),
//     or
//   - a form whose csrf field holds the token the console put in its
//     pending page (an HMAC, under a key drawn when the console starts, of
//     the operator token: a page elsewhere cannot read it), and that the
//     browser says is same-origin (Sec-Fetch-Site, else Origin, when it
//     sends them).

// Decider decides pending versions (ingest.Service.Decide: it refreshes
// the report assignments after an approval).
type Decider interface {
	Decide(ctx context.Context, jobID string, d ingest.Decision) (ingest.DecisionResult, error)
}

// role is what a request may do.
type role int

const (
	roleNone role = iota
	roleReader
	roleOperator
)

// roleOf is r's role: operator when it carries the operator token, reader
// when it carries the read-only one (or when the console has no read
// token), none otherwise.
func (h *Handler) roleOf(r *http.Request) role {
	if h.opts.OperatorToken != "" && authorized(r, h.opts.OperatorToken) && hasCredentials(r) {
		return roleOperator
	}
	if authorized(r, h.opts.Token) {
		return roleReader
	}
	return roleNone
}

func hasCredentials(r *http.Request) bool {
	_, _, basic := r.BasicAuth()
	return basic || bearer(r) != ""
}

// bearer is r's bearer token, "" when it has none.
func bearer(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

// newCSRFKey draws the key of the console's CSRF tokens.
func newCSRFKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// csrfToken is the token the pending page's forms carry.
func (h *Handler) csrfToken() string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte("geoingest console csrf\x00" + h.opts.OperatorToken))
	return hex.EncodeToString(m.Sum(nil))
}

// actionAllowed checks an action request (see the top of this file); it
// writes the refusal and returns false when it is not allowed.
func (h *Handler) actionAllowed(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.OperatorToken == "" {
		http.Error(w, "forbidden: this console is read-only (give it an operator token to act)", http.StatusForbidden)
		return false
	}
	if h.roleOf(r) != roleOperator {
		w.Header().Add("WWW-Authenticate", `Basic realm="geoingest console operator", charset="UTF-8"`)
		http.Error(w, "forbidden: acting needs the operator token", http.StatusUnauthorized)
		return false
	}
	if b := bearer(r); b != "" {
		return true // the header itself: no form elsewhere can set it
	}
	// Where the request comes from, as the browser says: Sec-Fetch-Site
	// where it sends one, else Origin (which is "null" under the pages'
	// no-referrer policy).
	switch site, o := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin"); {
	case site != "":
		if site != "same-origin" {
			http.Error(w, "forbidden: cross-site request", http.StatusForbidden)
			return false
		}
	case o != "":
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return false
		}
	}
	got := r.PostFormValue("csrf")
	want := h.csrfToken()
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		http.Error(w, "forbidden: the form's CSRF token is missing or stale: reload the page", http.StatusForbidden)
		return false
	}
	return true
}

// actor names who acted, for the audit trail.
func actor(r *http.Request) string {
	if u, _, ok := r.BasicAuth(); ok && u != "" {
		return "console:" + u
	}
	return "console:operator"
}

// decision reads the decision of an action request: approve or reject
// from the path, the reason from the form or a JSON body.
func decision(r *http.Request) (ingest.Decision, error) {
	d := ingest.Decision{Actor: actor(r)}
	switch r.PathValue("action") {
	case "approve":
		d.Approve = true
	case "reject":
	default:
		return d, ingest.Permanentf("action %q: want approve or reject", r.PathValue("action"))
	}
	var body struct {
		Reason string `json:"reason"`
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16)).Decode(&body); err != nil {
			return d, ingest.Permanentf("body: want {\"reason\": \"...\"}: %v", err)
		}
		d.Reason = body.Reason
	case bearer(r) != "" && !strings.HasPrefix(ct, "multipart/"):
		// A script's body (no browser form sets the bearer header): JSON
		// whatever its Content-Type (`curl -d '{"reason": ...}'` sends
		// it as a form), else a form.
		raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 1<<16))
		if err != nil {
			return d, ingest.Permanentf("body: %v", err)
		}
		if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "{") {
			if err := json.Unmarshal([]byte(t), &body); err != nil {
				return d, ingest.Permanentf("body: want {\"reason\": \"...\"}: %v", err)
			}
			d.Reason = body.Reason
		} else if form, err := url.ParseQuery(t); err == nil {
			d.Reason = form.Get("reason")
		}
	default:
		d.Reason = r.PostFormValue("reason")
	}
	if strings.TrimSpace(d.Reason) == "" {
		return d, ingest.Permanentf(`a decision needs a reason: a JSON body {"reason": "..."} or a form field reason`)
	}
	return d, nil
}

// apiPending is GET /api/pending: the pending versions.
func (h *Handler) apiPending(w http.ResponseWriter, r *http.Request) {
	if h.opts.Pending == nil {
		h.apiError(w, r, ingest.Permanentf("this console has no pending versions to show"))
		return
	}
	ps, err := h.opts.Pending.ListPending(r.Context())
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	if ps == nil {
		ps = []ingest.PendingInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": ps})
}

// apiDecide is POST /api/pending/{job_id}/{action}.
func (h *Handler) apiDecide(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	if h.opts.Decider == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "this console cannot decide pending versions"})
		return
	}
	d, err := decision(r)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	res, err := h.opts.Decider.Decide(r.Context(), r.PathValue("job_id"), d)
	if err != nil {
		code := status(err)
		if ingest.KindOf(err) == ingest.Precondition || errors.Is(err, ingest.ErrNotPending) {
			code = http.StatusConflict
		}
		writeJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	if d.Approve && res.Action == "superseded" {
		// A newer version of the source was applied: this one did not
		// become current and never will (geoingest pending approve exits
		// 1 for it too). The body still says what happened.
		writeJSON(w, http.StatusConflict, struct {
			ingest.DecisionResult
			Error string `json:"error"`
		}{res, "job " + res.JobID + " was superseded by a newer version of its source: it cannot be approved, nothing changed"})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// pendingData is what the pending page shows.
type pendingData struct {
	Now      time.Time
	Pending  []ingest.PendingInfo
	Operator bool   // the viewer may act
	CanAct   bool   // the console has an operator token
	CSRF     string // the forms' token (operators only)
	Done     string // what the last action did
	Error    string
}

// pendingPage is GET /pending.
func (h *Handler) pendingPage(w http.ResponseWriter, r *http.Request) {
	d := pendingData{Now: time.Now(), CanAct: h.opts.OperatorToken != "" && h.opts.Decider != nil,
		Done: r.URL.Query().Get("done")}
	d.Operator = d.CanAct && h.roleOf(r) == roleOperator
	if d.Operator {
		d.CSRF = h.csrfToken()
	}
	if h.opts.Pending != nil {
		ps, err := h.opts.Pending.ListPending(r.Context())
		if err != nil {
			d.Error = err.Error()
		}
		d.Pending = ps
	}
	h.render(w, "pending.html", d)
}

// pendingAction is POST /pending/{job_id}/{action}: the page's forms.
// It answers with a redirect to the pending page (303, so that a reload
// does not post again), which says what was done.
func (h *Handler) pendingAction(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	if h.opts.Decider == nil {
		http.Error(w, "this console cannot decide pending versions", http.StatusConflict)
		return
	}
	d, err := decision(r)
	if err != nil {
		http.Error(w, err.Error(), status(err))
		return
	}
	res, err := h.opts.Decider.Decide(r.Context(), r.PathValue("job_id"), d)
	msg := ""
	switch {
	case err != nil:
		msg = "failed: " + err.Error()
	case res.Already:
		msg = res.JobID + " was " + res.Action + " already by " + res.Actor
	default:
		msg = res.JobID + " " + res.Action
	}
	http.Redirect(w, r, "/pending?"+url.Values{"done": {msg}}.Encode(), http.StatusSeeOther)
}

// login is GET /login: it asks the browser for the operator's
// credentials (any user name, the operator token as the password) and
// then goes to the pending page.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.opts.OperatorToken == "" || h.roleOf(r) != roleOperator {
		w.Header().Add("WWW-Authenticate", `Basic realm="geoingest console operator", charset="UTF-8"`)
		http.Error(w, "sign in as the operator: any user name, the operator token as the password", http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/pending", http.StatusSeeOther)
}
