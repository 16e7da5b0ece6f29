package ingest

import (
	"context"
	"io"
)

// Hook points: the named points of a job's life (and of the maintenance
// beside the jobs) where the work can be stopped or steered from outside,
// for tests only. The domain owns the points and calls HookAt at each; it
// knows nothing of what answers. Two kinds of caller set a Hook, and
// nothing else does:
//
//   - an in-process test, in the context of the work (WithHook), to hold
//     the work at a point, steer it, or skip a skippable step
//     (HookHeartbeat);
//
//   - cmd/geoingest's main in a binary built with the tag
//     geoingest_testhooks (internal/testhook adapts the environment's
//     GEOINGEST_TEST_CRASH_AT and GEOINGEST_TEST_PAUSE_AT to a Hook on the
//     process's root context), so that the crash tests SIGKILL or pause a
//     process at a named point.
//
// With no hook in the context, HookAt costs one context lookup.

// The points, in the order a delivery passes them, then maintenance's.
// The strings are the names the environment uses
// (GEOINGEST_TEST_CRASH_AT=before-commit).
const (
	HookBeforeClaim     = "before-claim"     // the message is received, nothing claimed
	HookAfterClaim      = "after-claim"      // the claim is won, nothing downloaded
	HookDuringDownload  = "during-download"  // part of the object is on local disk
	HookBeforeWrite     = "before-write"     // downloaded and opened, the write gate not entered
	HookDuringCopy      = "during-copy"      // the write-gate transaction's COPY is streaming
	HookDuringPrefilter = "during-prefilter" // a new version's features kept by their bytes are found and listed, its second read not begun
	HookDuringDiff      = "during-diff"      // a new version is staged and checked, its diff against the current generation not applied
	HookDuringRewrite   = "during-rewrite"   // a mostly changed version is streamed into its own table, its changes not recorded
	HookBeforeCommit    = "before-commit"    // features and ledger written, COMMIT not sent
	HookDuringRetire    = "during-retire"    // a generation retired whole is in the history (its partition detached, or its rows copied), COMMIT not sent
	HookBeforeAck       = "before-ack"       // committed, the message not yet acked
	HookAfterAck        = "after-ack"        // the ack is done, the worker has not returned from it

	// HookBeforeFoldCommit is reached by the compactor when a job's rows
	// are copied into the shared partition, its ledger row re-pointed and
	// its own partition emptied, before that transaction's COMMIT.
	HookBeforeFoldCommit = "before-fold-commit"

	// HookPruneBatch is reached by prune before each batch of ledger rows
	// (with their claims) is removed, in a transaction of its own; the
	// batches before it are removed. HookWhere.Job is the batch's first
	// job.
	HookPruneBatch = "prune-batch"

	// HookBeforeRefreshCommit is reached by the report refresh when one
	// (parcel job, admin generation) pair's assignment and cells are
	// inserted, before that pair's COMMIT. HookWhere.Job is the parcel
	// job.
	HookBeforeRefreshCommit = "before-refresh-commit"

	// HookWebhookAfterRead is reached by a webhook's deliverer when it has
	// read the change records after its durable cursor, before it POSTs
	// the first of them. HookWhere.Job is that record's job.
	HookWebhookAfterRead = "webhook-after-read"

	// HookWebhookAfterPost is reached when the URL answered 2xx to a
	// record's POST, before the cursor is moved past it. HookWhere.Job is
	// its job.
	HookWebhookAfterPost = "webhook-after-post"

	// HookHeartbeat is reached before each renewal of a job's lease; a
	// hook that returns true skips the renewal, so that the lease runs
	// out.
	HookHeartbeat = "heartbeat"
)

// HookWhere is what reached a point: the worker (a Service's owner) and
// the job's key, "" where not known.
type HookWhere struct {
	Owner, Job string
}

// Hook is called at every point reached under a context that carries it
// (WithHook). Its result is whether to skip the step after a skippable
// point (HookHeartbeat); elsewhere it is ignored.
type Hook func(point string, w HookWhere) (skip bool)

type hookKey struct{}

// WithHook returns a context of ctx whose work calls fn at every point
// reached, after any hook ctx carries already; either may ask to skip.
func WithHook(ctx context.Context, fn Hook) context.Context {
	if prev, ok := ctx.Value(hookKey{}).(Hook); ok {
		next := fn
		fn = func(point string, w HookWhere) bool {
			skip := prev(point, w)
			return next(point, w) || skip
		}
	}
	return context.WithValue(ctx, hookKey{}, fn)
}

// HookAt calls ctx's hook, if any, at point. It reports whether the hook
// asked to skip the step.
func HookAt(ctx context.Context, point string, w HookWhere) (skip bool) {
	if fn, ok := ctx.Value(hookKey{}).(Hook); ok {
		return fn(point, w)
	}
	return false
}

// Hooked reports whether ctx carries a hook, so that a caller can leave
// out work done only for one.
func Hooked(ctx context.Context) bool {
	_, ok := ctx.Value(hookKey{}).(Hook)
	return ok
}

// HookReader returns r, or when ctx carries a hook a reader that calls
// HookAt(point) once its first bytes have been read.
func HookReader(ctx context.Context, r io.Reader, point string, w HookWhere) io.Reader {
	if !Hooked(ctx) {
		return r
	}
	return &hookReader{ctx: ctx, r: r, point: point, w: w}
}

type hookReader struct {
	ctx   context.Context
	r     io.Reader
	point string
	w     HookWhere
	read  bool
}

func (h *hookReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if !h.read && n > 0 {
		h.read = true
		HookAt(h.ctx, h.point, h.w)
	}
	return n, err
}
