// Package testhook is geoingest's one mechanism of fault injection for
// tests, and nothing else. Production code calls At at a few named points
// of a job's life (see the Point constants). Two kinds of hook answer:
//
//   - a hook an in-process test puts in the context of the work
//     (WithHook): it is called for every point reached under that
//     context, with the worker and the job (Where), and may hold the work
//     there, steer it, or skip a skippable step (Heartbeat). Nothing in
//     production sets one, so At costs a context lookup;
//
//   - in a binary built with the build tag geoingest_testhooks, as the
//     crash tests of cmd/geoingest build it, the environment decides,
//     once per process:
//
//     GEOINGEST_TEST_CRASH_AT=POINT   the process SIGKILLs itself at POINT
//     GEOINGEST_TEST_PAUSE_AT=POINT   the process stops at POINT until killed,
//     after writing GEOINGEST_TEST_MARKER (a
//     file path) if that is set
//
// Only the first time a point is reached counts. A release binary
// (built without the tag) ignores these variables.
package testhook

import (
	"context"
	"io"
)

// The points where a job can be stopped, in the order a delivery passes
// them.
const (
	BeforeClaim    = "before-claim"    // the message is received, nothing claimed
	AfterClaim     = "after-claim"     // the claim is won, nothing downloaded
	DuringDownload = "during-download" // part of the object is on local disk
	BeforeWrite    = "before-write"    // downloaded and opened, the write gate not entered
	DuringCopy     = "during-copy"     // the write-gate transaction's COPY is streaming
	DuringDiff     = "during-diff"     // a new version is staged and checked, its diff against the current generation not applied
	DuringRewrite  = "during-rewrite"  // a mostly changed version is streamed into its own table, its changes not recorded
	BeforeCommit   = "before-commit"   // features and ledger written, COMMIT not sent
	BeforeAck      = "before-ack"      // committed, the message not yet acked
	AfterAck       = "after-ack"       // the ack is done, the worker has not returned from it

	// BeforeFoldCommit is reached by the compactor when a job's rows are
	// copied into the shared partition, its ledger row re-pointed and its
	// own partition emptied, before that transaction's COMMIT.
	BeforeFoldCommit = "before-fold-commit"

	// PruneBatch is reached by prune before each batch of ledger rows
	// (with their claims) is removed, in a transaction of its own; the
	// batches before it are removed. Where.Job is the batch's first job.
	PruneBatch = "prune-batch"

	// BeforeRefreshCommit is reached by the report refresh when one
	// (parcel job, admin generation) pair's assignment and cells are
	// inserted, before that pair's COMMIT. Where.Job is the parcel job.
	BeforeRefreshCommit = "before-refresh-commit"

	// WebhookAfterRead is reached by a webhook's deliverer when it has
	// read the change records after its durable cursor, before it POSTs
	// the first of them. Where.Job is that record's job.
	WebhookAfterRead = "webhook-after-read"

	// WebhookAfterPost is reached when the URL answered 2xx to a record's
	// POST, before the cursor is moved past it. Where.Job is its job.
	WebhookAfterPost = "webhook-after-post"

	// Heartbeat is reached before each renewal of a job's lease; a hook
	// that returns true skips the renewal, so that the lease runs out.
	Heartbeat = "heartbeat"
)

// Where is what reached a point: the worker (a Service's owner) and the
// job's key, "" where not known.
type Where struct {
	Owner, Job string
}

// Hook is an in-process hook (WithHook). Its result is whether to skip
// the step after a skippable point (Heartbeat); elsewhere it is ignored.
type Hook func(point string, w Where) (skip bool)

type hookKey struct{}

// WithHook returns a context of ctx whose work calls fn at every point
// reached (after any hook ctx carries already).
func WithHook(ctx context.Context, fn Hook) context.Context {
	if prev, ok := ctx.Value(hookKey{}).(Hook); ok {
		next := fn
		fn = func(point string, w Where) bool {
			skip := prev(point, w)
			return next(point, w) || skip
		}
	}
	return context.WithValue(ctx, hookKey{}, fn)
}

// At calls the hooks of point: the environment's (a tagged build) and
// ctx's. It reports whether ctx's hook asked to skip the step.
func At(ctx context.Context, point string, w Where) (skip bool) {
	if hook != nil {
		hook(point)
	}
	if fn, ok := ctx.Value(hookKey{}).(Hook); ok {
		return fn(point, w)
	}
	return false
}

// Enabled reports whether some hook may answer under ctx, so that a
// caller can leave out work done only for a hook.
func Enabled(ctx context.Context) bool {
	if hook != nil {
		return true
	}
	_, ok := ctx.Value(hookKey{}).(Hook)
	return ok
}

// Reader returns r, or when hooks are enabled a reader that calls
// At(point) once its first bytes have been read.
func Reader(ctx context.Context, r io.Reader, point string, w Where) io.Reader {
	if !Enabled(ctx) {
		return r
	}
	return &hookReader{ctx: ctx, r: r, point: point, w: w}
}

type hookReader struct {
	ctx   context.Context
	r     io.Reader
	point string
	w     Where
	n     int64
}

func (h *hookReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.n == 0 && n > 0 {
		h.n += int64(n)
		At(h.ctx, h.point, h.w)
	}
	return n, err
}
