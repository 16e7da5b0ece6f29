package queue

// Settler is implemented by a Receiver that sees messages coming before it
// delivers them: the inbox's files that are still being written, or have
// not stayed the same for its settle interval. It is optional; a caller
// that stops when idle (serve --until-idle) does not stop while one is
// settling.
type Settler interface {
	// Settling reports whether a message is on its way: seen, not yet
	// deliverable.
	Settling() bool
}

var _ Settler = (*Inbox)(nil)
