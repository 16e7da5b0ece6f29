package queue

import "context"

// DeadLetterDepther is implemented by a Receiver that can tell how many
// messages wait in its dead-letter queue. It is optional: an inbox has no
// dead-letter queue, and callers show the depth only where it is known.
type DeadLetterDepther interface {
	// DeadLetterDepth is the approximate number of messages in the
	// dead-letter queue (visible ones, as the transport counts them). It
	// returns ErrNoDeadLetterQueue when none is configured.
	DeadLetterDepth(ctx context.Context) (int64, error)
}
