package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/queue"
)

// The dead letters and the retry of a failed job (ingest/deadletters.go):
//
//	GET  /deadletters                          the dead letters, with re-drive and delete forms for operators
//	GET  /api/deadletters                      {"dead_letters": [...]} (409 where there is no readable queue)
//	POST /deadletters/{id}/{redrive|delete}    a form (csrf): operators
//	POST /api/deadletters/{id}/{redrive|delete}
//	POST /jobs/{job_id}/retry                  a form on the job page (csrf): operators
//	POST /api/jobs/{job_id}/retry              {"job_id", "redriven": [dead letter ids]}
//
// Acting is allowed as for the pending versions (actionAllowed): the
// operator token, and a same-origin form with the CSRF token or a bearer
// header. Every action is logged with its actor.

// noDeadLetters says why the console cannot read a dead-letter queue.
func (h *Handler) noDeadLetters() string {
	if h.opts.DeadLetterBox != nil {
		return ""
	}
	if h.opts.NoDeadLetters != "" {
		return h.opts.NoDeadLetters
	}
	return "this console has no queue: the dead letters and retries are on the console of geoingest serve"
}

// deadLettersData is what the dead-letter page shows.
type deadLettersData struct {
	Now      time.Time
	Letters  []ingest.DeadLetterInfo
	Why      string // why there are none to show, when there is no queue
	Operator bool
	CanAct   bool
	CSRF     string
	Done     string
	Error    string
}

func (h *Handler) canAct() bool { return h.opts.OperatorToken != "" }

// deadLettersPage is GET /deadletters.
func (h *Handler) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	d := deadLettersData{Now: time.Now(), CanAct: h.canAct() && h.opts.DeadLetterBox != nil,
		Done: r.URL.Query().Get("done"), Why: h.noDeadLetters()}
	d.Operator = d.CanAct && h.roleOf(r) == roleOperator
	if d.Operator {
		d.CSRF = h.csrfToken()
	}
	if h.opts.DeadLetterBox != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		dls, err := ingest.ListDeadLetters(ctx, h.opts.DeadLetterBox, queue.MaxDeadLetters)
		if err != nil {
			d.Error = err.Error()
		}
		d.Letters = dls
	}
	h.render(w, "deadletters.html", d)
}

// apiDeadLetters is GET /api/deadletters.
func (h *Handler) apiDeadLetters(w http.ResponseWriter, r *http.Request) {
	if h.opts.DeadLetterBox == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": h.noDeadLetters()})
		return
	}
	dls, err := ingest.ListDeadLetters(r.Context(), h.opts.DeadLetterBox, queue.MaxDeadLetters)
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead_letters": dls})
}

// deadLetterAction re-drives or deletes the dead letter of r's path.
func (h *Handler) deadLetterAction(r *http.Request) (string, int, error) {
	if h.opts.DeadLetterBox == nil {
		return "", http.StatusConflict, errors.New(h.noDeadLetters())
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var err error
	switch action {
	case "redrive":
		err = h.opts.DeadLetterBox.RedriveDeadLetter(r.Context(), id)
	case "delete":
		err = h.opts.DeadLetterBox.DeleteDeadLetter(r.Context(), id)
	default:
		return "", http.StatusBadRequest, errors.New("action " + action + ": want redrive or delete")
	}
	switch {
	case errors.Is(err, queue.ErrNoSuchDeadLetter):
		return "", http.StatusNotFound, err
	case err != nil:
		h.opts.Log.Warn("console: dead letter", "id", id, "action", action, "error", err.Error())
		return "", http.StatusServiceUnavailable, err
	}
	done := map[string]string{"redrive": "re-driven", "delete": "deleted"}[action]
	h.opts.Log.Info("console: dead letter "+done, "id", id, "actor", actor(r))
	return id + " " + done, http.StatusOK, nil
}

// apiDeadLetterAction is POST /api/deadletters/{id}/{action}.
func (h *Handler) apiDeadLetterAction(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	msg, code, err := h.deadLetterAction(r)
	if err != nil {
		writeJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, code, map[string]string{"id": r.PathValue("id"), "action": r.PathValue("action"), "done": msg, "actor": actor(r)})
}

// deadLetterForm is POST /deadletters/{id}/{action}: the page's forms,
// answered with a redirect (303) to the page, which says what was done.
func (h *Handler) deadLetterForm(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	msg, _, err := h.deadLetterAction(r)
	if err != nil {
		msg = "failed: " + err.Error()
	}
	http.Redirect(w, r, "/deadletters?"+url.Values{"done": {msg}}.Encode(), http.StatusSeeOther)
}

// retry retries the failed job of r's path.
func (h *Handler) retry(r *http.Request) (ingest.RetryResult, int, error) {
	jobID := r.PathValue("job_id")
	if h.opts.DeadLetterBox == nil {
		return ingest.RetryResult{JobID: jobID}, http.StatusConflict, errors.New("cannot retry: " + h.noDeadLetters())
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	res, err := ingest.RetryFailedJob(ctx, h.opts.Reader, h.opts.DeadLetterBox, jobID)
	switch {
	case err == nil:
		h.opts.Log.Info("console: failed job retried: its dead letters re-driven", "job", jobID, "dead_letters", res.Redriven, "actor", actor(r))
		return res, http.StatusOK, nil
	case errors.Is(err, ingest.ErrNoSuchJob):
		return res, http.StatusNotFound, err
	case ingest.KindOf(err) == ingest.Precondition:
		return res, http.StatusConflict, err
	}
	return res, status(err), err
}

// apiRetry is POST /api/jobs/{job_id}/retry.
func (h *Handler) apiRetry(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	res, code, err := h.retry(r)
	if err != nil {
		writeJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, code, res)
}

// retryForm is POST /jobs/{job_id}/retry: the job page's form, answered
// with a redirect (303) to the job page, which says what was done.
func (h *Handler) retryForm(w http.ResponseWriter, r *http.Request) {
	if !h.actionAllowed(w, r) {
		return
	}
	msg := "retried: the event is delivered again"
	if _, _, err := h.retry(r); err != nil {
		msg = "failed: " + err.Error()
	}
	http.Redirect(w, r, "/jobs/"+url.PathEscape(r.PathValue("job_id"))+"?"+url.Values{"done": {msg}}.Encode(), http.StatusSeeOther)
}
