// Package testhook is fault injection for geoingest's crash tests, and
// nothing else. Production code calls At at a few named points of a job's
// life (see the Point constants); At does nothing unless the binary was
// built with the build tag geoingest_testhooks, as the tests of
// cmd/geoingest build it. Then the environment decides, once per process:
//
//	GEOINGEST_TEST_CRASH_AT=POINT   the process SIGKILLs itself at POINT
//	GEOINGEST_TEST_PAUSE_AT=POINT   the process stops at POINT until killed,
//	                                after writing GEOINGEST_TEST_MARKER (a
//	                                file path) if that is set
//
// Only the first time a point is reached counts. A release binary
// (built without the tag) ignores these variables.
package testhook

import "io"

// The points where a job can be stopped, in the order a delivery passes
// them.
const (
	BeforeClaim    = "before-claim"    // the message is received, nothing claimed
	AfterClaim     = "after-claim"     // the claim is won, nothing downloaded
	DuringDownload = "during-download" // part of the object is on local disk
	DuringCopy     = "during-copy"     // the write-gate transaction's COPY is streaming
	BeforeCommit   = "before-commit"   // features and ledger written, COMMIT not sent
	BeforeAck      = "before-ack"      // committed, the message not yet acked
	AfterAck       = "after-ack"       // the ack is done, the worker has not returned from it
)

// At stops the process at point if the environment asks for it (see the
// package comment); otherwise it returns at once.
func At(point string) {
	if hook != nil {
		hook(point)
	}
}

// Enabled reports whether this binary honours the hooks.
func Enabled() bool { return hook != nil }

// Reader returns r, or when hooks are enabled a reader that calls At(point)
// once its first bytes have been read.
func Reader(r io.Reader, point string) io.Reader {
	if hook == nil {
		return r
	}
	return &hookReader{r: r, point: point}
}

type hookReader struct {
	r     io.Reader
	point string
	n     int64
}

func (h *hookReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.n == 0 && n > 0 {
		h.n += int64(n)
		At(h.point)
	}
	return n, err
}
