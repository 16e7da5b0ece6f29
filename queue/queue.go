// Package queue receives messages from a transport with at-least-once
// delivery: a message that is not acked is delivered again. It has one
// message type, one small Receiver interface implemented once per
// transport (a local inbox directory here, SQS in queue/sqs, so that this
// package imports no AWS SDK), and one conformance suite that every
// driver passes.
//
// Receivers know nothing about what the messages mean: parsing bucket
// events and running jobs is the caller's business (package ingest).
package queue

import (
	"context"
	"errors"
	"time"
)

// Message is one delivery of a message. The same message delivered again is
// a new *Message with the same ID and a higher ReceiveCount.
type Message struct {
	// ID is the transport's message id, the same for every delivery.
	ID string
	// Body is the message body: for SQS the body as sent, for the inbox
	// the absolute path of the file.
	Body []byte
	// ReceiveCount is how many times the message has been delivered,
	// this delivery included (SQS ApproximateReceiveCount), at least 1.
	ReceiveCount int
	// Attributes are the message's string attributes (SQS message
	// attributes; for the inbox "path" and "rel", the path relative to
	// the inbox directory with forward slashes).
	Attributes map[string]string
	// SentAt is when the message was first sent (or the file last
	// modified), zero when unknown.
	SentAt time.Time

	// Handle is the driver's token for this delivery (the SQS receipt
	// handle, the inbox delivery): set by the driver that received the
	// message, opaque to everyone else.
	Handle any
}

// Receiver is a queue of messages with at-least-once delivery. A received
// message is invisible to other receivers until it is acked, nacked, dead-
// lettered, or (for transports with a visibility timeout) its visibility
// timeout expires. All methods are safe for concurrent use.
type Receiver interface {
	// Receive returns between 0 and max messages (max is capped at 10).
	// When no message is available it blocks for no more than about the
	// driver's wait time (SQS: the long-poll wait, at most 20 s; inbox:
	// about its poll interval) and returns an empty slice and a nil
	// error. When ctx is done it returns ctx.Err() promptly; a message
	// received in that moment stays invisible until its timeout and is
	// then delivered again, so nothing is lost (the Consumer does not cut
	// its receive at shutdown for that reason: it gives back what the
	// receive returns).
	Receive(ctx context.Context, max int) ([]*Message, error)
	// Ack removes m from the queue: it is never delivered again. Acking
	// a delivery whose handle has expired (the message was redelivered
	// meanwhile) is not an error: it returns nil.
	Ack(ctx context.Context, m *Message) error
	// Nack makes m visible again after delay (0: at once), with its
	// ReceiveCount kept. The caller uses it for backoff after a transient
	// failure and to give messages back on shutdown.
	Nack(ctx context.Context, m *Message, delay time.Duration) error
	// Extend keeps m invisible for d from now. A driver without a
	// visibility timeout does nothing and returns nil.
	Extend(ctx context.Context, m *Message, d time.Duration) error
	// DeadLetter moves m to the dead-letter queue with reason in its
	// ReasonAttribute attribute, then removes it from this queue. It
	// returns ErrNoDeadLetterQueue, leaving m untouched, when the
	// receiver has none.
	DeadLetter(ctx context.Context, m *Message, reason string) error
	// Close releases the receiver's resources. Messages still received
	// and not acked are delivered again later.
	Close() error
}

// ReasonAttribute is the message attribute in which DeadLetter records why
// the message was dead-lettered.
const ReasonAttribute = "geoingest-reason"

// SourceIDAttribute is the message attribute in which DeadLetter records
// the message's id in the source queue.
const SourceIDAttribute = "geoingest-source-message-id"

// ErrNoDeadLetterQueue is returned by DeadLetter when the receiver was
// configured without a dead-letter queue.
var ErrNoDeadLetterQueue = errors.New("queue: no dead-letter queue configured")

// MaxBatch is the most messages one Receive returns (the SQS limit).
const MaxBatch = 10

// ClampBatch is max bounded to 1..MaxBatch: what a driver's Receive
// returns at most.
func ClampBatch(max int) int {
	if max < 1 {
		return 1
	}
	if max > MaxBatch {
		return MaxBatch
	}
	return max
}
