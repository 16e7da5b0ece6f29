package queue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// DeadLetterBox is implemented by a Receiver whose dead-letter queue an
// operator can read and act on: list the dead letters, re-drive one (send
// it back to the source queue, where it is delivered again like any
// message) or delete one. It is optional: SQS and Azure Storage Queues
// implement it; an inbox implements it over its reason files; Pub/Sub
// does not (a dead-letter topic cannot be read without a subscription of
// its own).
//
// A re-drive is at least once, like every delivery: the message is sent to
// the source queue before it is removed from the dead-letter queue, so a
// crash between the two leaves a copy in both, and re-driving that copy
// again delivers the event twice. The job's claim and write gates make
// every extra delivery a duplicate: nothing is written twice.
type DeadLetterBox interface {
	// DeadLetters lists up to max dead letters (at most MaxDeadLetters),
	// oldest first where the transport knows. Listing does not remove
	// them; while it runs a transport with a visibility timeout hides
	// them for a moment from another listing.
	DeadLetters(ctx context.Context, max int) ([]DeadLetter, error)
	// RedriveDeadLetter sends the dead letter id back to the source queue
	// (its original body and attributes, without the reason) and then
	// removes it from the dead-letter queue. ErrNoSuchDeadLetter when no
	// dead letter has that id (re-driven or deleted already, or being
	// acted on by someone else right now).
	RedriveDeadLetter(ctx context.Context, id string) error
	// DeleteDeadLetter removes the dead letter id for good.
	// ErrNoSuchDeadLetter as for RedriveDeadLetter.
	DeleteDeadLetter(ctx context.Context, id string) error
}

// DeadLetter is one message in a dead-letter queue.
type DeadLetter struct {
	// ID is the dead letter's id in the dead-letter queue: what
	// RedriveDeadLetter and DeleteDeadLetter take.
	ID string `json:"id"`
	// Body is the original message's body, as it would be delivered again.
	Body string `json:"body"`
	// Reason is why it was dead-lettered (ReasonAttribute), "" when it
	// was not geoingest that moved it (a queue's own redrive policy).
	Reason string `json:"reason,omitempty"`
	// SourceID is the message's id in the source queue
	// (SourceIDAttribute), "" when not known.
	SourceID string `json:"source_message_id,omitempty"`
	// SentAt is when it was put in the dead-letter queue, zero when not
	// known.
	SentAt time.Time `json:"dead_lettered_at,omitzero"`
	// ReceiveCount is how many times the dead-letter queue delivered it
	// (listing counts), 0 when not known.
	ReceiveCount int `json:"receive_count,omitempty"`
	// Attributes are the original message's attributes.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// MaxDeadLetters bounds one listing: a dead-letter queue is read by
// receiving from it, and a listing holds what it received until it is done.
const MaxDeadLetters = 100

// ErrNoSuchDeadLetter is returned when a dead letter named by id is not in
// the dead-letter queue.
var ErrNoSuchDeadLetter = errors.New("no such dead letter (re-driven or deleted already?)")

// ClampDeadLetters is max bounded to 1..MaxDeadLetters.
func ClampDeadLetters(max int) int {
	if max < 1 || max > MaxDeadLetters {
		return MaxDeadLetters
	}
	return max
}

// SortDeadLetters orders dls oldest first (by SentAt, then id).
func SortDeadLetters(dls []DeadLetter) {
	slices.SortStableFunc(dls, func(a, b DeadLetter) int {
		if c := a.SentAt.Compare(b.SentAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
