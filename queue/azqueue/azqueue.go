// Package azqueue is the queue.Receiver of an Azure Storage Queue (and of
// Azurite in the tests), the queue Event Grid delivers Blob Storage events
// to: receive is Get Messages with a visibility timeout (polled: the
// service has no long poll), ack is Delete Message, nack and extend are
// Update Message with a new visibility timeout (each gives the delivery a
// new pop receipt, kept in the message's handle), dead-letter is Put
// Message to the dead-letter queue, then Delete Message.
//
// A Storage Queue message has no attributes, so a dead letter is a JSON
// object that carries the reason and the source message id beside the
// original message text: {"geoingest-reason":…,
// "geoingest-source-message-id":…,"message":…} (see DeadLetterBody).
package azqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
	"github.com/geoingest/geoingest/queue"
)

// Options configure a Storage Queue receiver.
type Options struct {
	// Wait is how long one Receive polls an empty queue before it returns
	// none. Zero means 20 s.
	Wait time.Duration
	// Poll is the interval between two polls of an empty queue. Zero
	// means 1 s.
	Poll time.Duration
	// Visibility is the visibility timeout asked for on receive (whole
	// seconds). Zero means 30 s (the service's default).
	Visibility time.Duration
	// DeadLetter is the dead-letter queue; nil means none
	// (queue.ErrNoDeadLetterQueue).
	DeadLetter *sdk.QueueClient
}

// Receiver is a queue.Receiver on one Storage Queue.
type Receiver struct {
	q    *sdk.QueueClient
	opts Options
}

// maxVisibility is the longest visibility timeout the service accepts.
const maxVisibility = 7 * 24 * time.Hour

// New returns a receiver on q.
func New(q *sdk.QueueClient, opts Options) *Receiver {
	if opts.Wait <= 0 {
		opts.Wait = 20 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Visibility <= 0 {
		opts.Visibility = 30 * time.Second
	}
	return &Receiver{q: q, opts: opts}
}

// ParseURL splits azqueue://ACCOUNT/QUEUE.
func ParseURL(u string) (account, name string, err error) {
	rest, ok := strings.CutPrefix(u, "azqueue://")
	account, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || account == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want azqueue://ACCOUNT/QUEUE", u)
	}
	return account, name, nil
}

// handle is one delivery: the message id, the text (Update Message
// rewrites it), and the current pop receipt, which every update renews.
type handle struct {
	id   string
	text string
	mu   sync.Mutex
	pop  string
}

func seconds(d time.Duration) int32 {
	if d > maxVisibility {
		d = maxVisibility
	}
	return int32((d + time.Second - 1) / time.Second)
}

// Receive gets up to max messages (at most 10), polling an empty queue
// every Poll for at most Wait.
func (r *Receiver) Receive(ctx context.Context, n int) ([]*queue.Message, error) {
	deadline := time.Now().Add(r.opts.Wait)
	for {
		out, err := r.q.DequeueMessages(ctx, &sdk.DequeueMessagesOptions{
			NumberOfMessages: to.Ptr(int32(queue.ClampBatch(n))), VisibilityTimeout: to.Ptr(seconds(r.opts.Visibility))})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("azqueue receive: %w", err)
		}
		if len(out.Messages) > 0 {
			msgs := make([]*queue.Message, 0, len(out.Messages))
			for _, m := range out.Messages {
				h := &handle{id: deref(m.MessageID), text: deref(m.MessageText), pop: deref(m.PopReceipt)}
				msg := &queue.Message{ID: h.id, Body: []byte(h.text), ReceiveCount: 1, Attributes: map[string]string{}, Handle: h}
				if m.DequeueCount != nil && *m.DequeueCount > 0 {
					msg.ReceiveCount = int(*m.DequeueCount)
				}
				if m.InsertionTime != nil {
					msg.SentAt = *m.InsertionTime
				}
				msgs = append(msgs, msg)
			}
			return msgs, nil
		}
		if !time.Now().Add(r.opts.Poll).Before(deadline) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.opts.Poll):
		}
	}
}

// gone reports whether err says the delivery is over: the message was
// deleted, or received again (its pop receipt changed).
func gone(err error) bool {
	return queueerror.HasCode(err, queueerror.MessageNotFound, queueerror.PopReceiptMismatch)
}

// Ack deletes m. A message deleted or received again meanwhile is not an error.
func (r *Receiver) Ack(ctx context.Context, m *queue.Message) error {
	h, ok := m.Handle.(*handle)
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := r.q.DeleteMessage(ctx, h.id, h.pop, nil); err != nil && !gone(err) {
		return fmt.Errorf("azqueue delete %s: %w", m.ID, err)
	}
	return nil
}

// update sets m's visibility timeout to d from now and keeps the new pop receipt.
func (r *Receiver) update(ctx context.Context, m *queue.Message, d time.Duration) error {
	h, ok := m.Handle.(*handle)
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out, err := r.q.UpdateMessage(ctx, h.id, h.pop, h.text, &sdk.UpdateMessageOptions{VisibilityTimeout: to.Ptr(max(seconds(d), 0))})
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	if out.PopReceipt != nil {
		h.pop = *out.PopReceipt
	}
	return nil
}

// Nack makes m visible again after delay (at most 7 days).
func (r *Receiver) Nack(ctx context.Context, m *queue.Message, delay time.Duration) error {
	if err := r.update(ctx, m, delay); err != nil {
		return fmt.Errorf("azqueue nack %s: %w", m.ID, err)
	}
	return nil
}

// Extend keeps m invisible for d from now.
func (r *Receiver) Extend(ctx context.Context, m *queue.Message, d time.Duration) error {
	if err := r.update(ctx, m, max(d, time.Second)); err != nil {
		return fmt.Errorf("azqueue extend %s: %w", m.ID, err)
	}
	return nil
}

// DeadLetterBody is a dead letter: the reason, the source message's id
// and its text.
type DeadLetterBody struct {
	Reason   string `json:"geoingest-reason"`
	SourceID string `json:"geoingest-source-message-id"`
	Message  string `json:"message"`
}

// DeadLetter puts DeadLetterBody{reason, m's id, m's text} on the
// dead-letter queue, then deletes m. If the put fails m is left in place.
func (r *Receiver) DeadLetter(ctx context.Context, m *queue.Message, reason string) error {
	if r.opts.DeadLetter == nil {
		return queue.ErrNoDeadLetterQueue
	}
	if reason == "" {
		reason = "unspecified"
	}
	body := DeadLetterBody{Reason: reason, SourceID: m.ID, Message: string(m.Body)}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	const limit = 64 << 10 // a queue message is at most 64 KiB
	if len(b) > limit {
		body.Reason = body.Reason[:max(0, len(body.Reason)-(len(b)-limit))]
		b, _ = json.Marshal(body)
	}
	if _, err := r.opts.DeadLetter.EnqueueMessage(ctx, string(b), &sdk.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))}); err != nil {
		return fmt.Errorf("azqueue dead-letter %s: %w", m.ID, err)
	}
	return r.Ack(ctx, m)
}

// Close does nothing: the client holds no per-receiver resources.
func (r *Receiver) Close() error { return nil }

// ErrNotFound is wrapped by Check when the queue does not exist.
var ErrNotFound = errors.New("no such queue")

// Check asks for the queue's properties: the start-up check of serve.
func Check(ctx context.Context, q *sdk.QueueClient) error {
	if _, err := q.GetProperties(ctx, nil); err != nil {
		if queueerror.HasCode(err, queueerror.QueueNotFound) {
			return fmt.Errorf("%s: %w: %v", q.URL(), ErrNotFound, err)
		}
		return fmt.Errorf("%s: %w", q.URL(), err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
