package ingest

import (
	"context"
	"errors"
	"strings"
	"time"
)

// PendingVersions is the store's role for the versions the guards held
// (Outcome Pending): an operator lists them and decides each once.
//
// What happens to a pending version:
//   - approved: it becomes its source's current generation, replacing
//     the one it was compared with, in one transaction, exactly once;
//   - rejected: its features are dropped and it never becomes current;
//   - superseded: a newer version of its source was applied or held (a
//     source keeps at most one pending version, its newest), or an
//     approval found a newer version current already; its features are
//     dropped. A pending version therefore never blocks its source: the
//     next version is compared with the current generation as usual.
//
// Decisions are idempotent: deciding a version again the same way
// reports the first decision (Already), and deciding it the other way
// once it is decided is a Precondition error. Each decision is recorded
// with who, when and why.
type PendingVersions interface {
	// ListPending lists the pending versions, oldest first.
	ListPending(ctx context.Context) ([]PendingInfo, error)
	Decider
	// GuardEvents returns the audit trail of jobID's guards, oldest first.
	GuardEvents(ctx context.Context, jobID string) ([]GuardEvent, error)
}

// Decider decides pending versions (Service.Decide runs on one).
type Decider interface {
	// Decide approves or rejects the pending version jobID.
	Decide(ctx context.Context, jobID string, d Decision) (DecisionResult, error)
}

// PendingInfo is one pending version.
type PendingInfo struct {
	JobID     string    `json:"job_id"`
	Source    string    `json:"source"`
	Target    string    `json:"target"`
	Features  int64     `json:"features"`
	AreaM2    float64   `json:"area_m2"`
	Reason    string    `json:"reason"`
	Summary   []byte    `json:"-"`
	Current   string    `json:"current_job"`
	Committed time.Time `json:"committed_at"`
	// Quarantined is the version's features a policy left out (set by
	// PendingLookup only).
	Quarantined int64 `json:"-"`
}

// Decision is an operator's decision on a pending version.
type Decision struct {
	Approve bool
	Actor   string // who: a user or token name
	Reason  string // why (required)
}

// DecisionResult is what a decision did.
type DecisionResult struct {
	JobID  string `json:"job_id"`
	Target string `json:"target"`
	// Action is approved, rejected or superseded (an approval that found
	// a newer version current).
	Action string `json:"action"`
	// Already is set when the version had been decided before: nothing
	// changed, and Action, Actor and At are that first decision's.
	Already bool      `json:"already"`
	Actor   string    `json:"actor"`
	At      time.Time `json:"at"`
	// Replaced is the generation an approval replaced, if any.
	Replaced string `json:"replaced,omitempty"`
}

// GuardEvent is one entry of a version's guard audit trail.
type GuardEvent struct {
	Action  string    `json:"action"` // held, forced, approved, rejected, superseded
	Actor   string    `json:"actor"`
	Reason  string    `json:"reason"`
	Summary []byte    `json:"-"`
	At      time.Time `json:"at"`
}

// Decide approves or rejects a pending version (see PendingVersions) and,
// when an approval made it current, refreshes the report assignments.
func (s *Service) Decide(ctx context.Context, jobID string, d Decision) (DecisionResult, error) {
	if strings.TrimSpace(d.Reason) == "" {
		return DecisionResult{}, Permanentf("a decision on a pending version needs a reason (--reason TEXT)")
	}
	if strings.TrimSpace(d.Actor) == "" {
		return DecisionResult{}, Permanentf("a decision on a pending version needs an actor")
	}
	if s.Pending == nil {
		return DecisionResult{}, Permanentf("this service decides no pending versions (its store has none)")
	}
	r, err := s.Pending.Decide(ctx, jobID, d)
	if err != nil {
		return r, err
	}
	log := s.Log.With("job", jobID)
	log.Info("pending version decided", "action", r.Action, "already", r.Already, "actor", d.Actor, "reason", d.Reason)
	if r.Action == "approved" && !r.Already {
		p := DefaultParams(r.Target)
		s.refreshReports(ctx, log, Job{ID: jobID, Params: p}, WriteResult{Outcome: Written, Replaced: r.Replaced})
	}
	return r, nil
}

// PendingLookup reads one pending version (postgis.Store implements it).
type PendingLookup interface {
	// PendingVersion returns jobID's PendingInfo (its features, area and
	// the reason it was held; no source) while it is pending; ok false
	// when it is not (never held, or decided or superseded since).
	PendingVersion(ctx context.Context, jobID string) (info PendingInfo, ok bool, err error)
}

// StillPending is res, a delivery of a job committed before
// (AlreadyPresent), as Outcome Pending when that job is a version a guard
// holds and nobody has decided yet, with its reason and counts: a file
// delivered again reports what the first delivery did, and `ingest` and
// `backfill` exit as they did then (the version is not current; it waits
// for a decision). Any other result, or a store that is no PendingLookup,
// comes back as it is; so does res when the lookup fails (a delivery
// stopped at a gate is still done), with that error.
func StillPending(ctx context.Context, store any, res Result) (Result, error) {
	pl, ok := store.(PendingLookup)
	if res.Outcome != AlreadyPresent || !ok {
		return res, nil
	}
	p, ok, err := pl.PendingVersion(ctx, res.JobID)
	if err != nil || !ok {
		return res, err
	}
	res.Outcome, res.Reason, res.Features, res.AreaM2, res.Quarantined = Pending, p.Reason, p.Features, p.AreaM2, p.Quarantined
	return res, nil
}

// ErrNotPending is the error of a decision on a job that is not (and
// never was) a pending version.
var ErrNotPending = errors.New("not a pending version")
