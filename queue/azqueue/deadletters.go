package azqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/queue"
)

var _ queue.DeadLetterBox = (*Receiver)(nil)

// A Storage Queue can be peeked (up to 32 messages, without hiding them):
// that is the listing. Acting on one dead letter needs its pop receipt,
// which only a receive gives: the dead letters are received with a short
// visibility timeout until the one named comes, and the others are made
// visible again at once (Update Message, visibility 0).

// peekMax is the most messages one Peek Messages returns.
const peekMax = 32

// scanVisibility is how long a dead letter being looked at stays hidden if
// the look is cut before it gives the message back.
const scanVisibility = 30 * time.Second

// deadLetter is a queue.DeadLetter read from the dead-letter queue's
// message text (DeadLetterBody; a text that is not one is the body itself,
// with no reason).
func deadLetter(id, text string, at *time.Time, count *int64) queue.DeadLetter {
	dl := queue.DeadLetter{ID: id, Body: text}
	var b DeadLetterBody
	if json.Unmarshal([]byte(text), &b) == nil && (b.Reason != "" || b.SourceID != "") {
		dl.Body, dl.Reason, dl.SourceID = b.Message, b.Reason, b.SourceID
	}
	if at != nil {
		dl.SentAt = *at
	}
	if count != nil {
		dl.ReceiveCount = int(*count)
	}
	return dl
}

// DeadLetters implements queue.DeadLetterBox: the first (up to 32) dead
// letters, by Peek Messages, which hides nothing.
func (r *Receiver) DeadLetters(ctx context.Context, max int) ([]queue.DeadLetter, error) {
	if r.opts.DeadLetter == nil {
		return nil, queue.ErrNoDeadLetterQueue
	}
	out, err := r.opts.DeadLetter.PeekMessages(ctx, &sdk.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(min(queue.ClampDeadLetters(max), peekMax)))})
	if err != nil {
		return nil, fmt.Errorf("azqueue dead letters: %w", err)
	}
	dls := make([]queue.DeadLetter, 0, len(out.Messages))
	for _, m := range out.Messages {
		dls = append(dls, deadLetter(deref(m.MessageID), deref(m.MessageText), m.InsertionTime, m.DequeueCount))
	}
	queue.SortDeadLetters(dls)
	return dls, nil
}

// received is a dead letter received for an action, with its pop receipt.
type received struct {
	dl   queue.DeadLetter
	text string
	pop  string
}

// find receives dead letters until id comes (or no more come, or
// queue.MaxDeadLetters did) and makes the others visible again.
func (r *Receiver) find(ctx context.Context, id string) (received, error) {
	if r.opts.DeadLetter == nil {
		return received{}, queue.ErrNoDeadLetterQueue
	}
	var others []received
	defer func() {
		ctx := context.WithoutCancel(ctx)
		for _, o := range others {
			// A failure leaves it hidden for scanVisibility at most.
			_, _ = r.opts.DeadLetter.UpdateMessage(ctx, o.dl.ID, o.pop, o.text, &sdk.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		}
	}()
	for len(others) < queue.MaxDeadLetters {
		out, err := r.opts.DeadLetter.DequeueMessages(ctx, &sdk.DequeueMessagesOptions{
			NumberOfMessages: to.Ptr(int32(peekMax)), VisibilityTimeout: to.Ptr(int32(scanVisibility / time.Second))})
		if err != nil {
			return received{}, fmt.Errorf("azqueue dead letter %s: %w", id, err)
		}
		if len(out.Messages) == 0 {
			break
		}
		var found *received
		for _, m := range out.Messages {
			rc := received{dl: deadLetter(deref(m.MessageID), deref(m.MessageText), m.InsertionTime, m.DequeueCount),
				text: deref(m.MessageText), pop: deref(m.PopReceipt)}
			if rc.dl.ID == id && found == nil {
				found = &rc
				continue
			}
			others = append(others, rc)
		}
		if found != nil {
			return *found, nil
		}
	}
	return received{}, fmt.Errorf("azqueue dead letter %s: %w", id, queue.ErrNoSuchDeadLetter)
}

// RedriveDeadLetter implements queue.DeadLetterBox: Put Message of the
// original text on the source queue, then Delete Message from the
// dead-letter queue.
func (r *Receiver) RedriveDeadLetter(ctx context.Context, id string) error {
	rc, err := r.find(ctx, id)
	if err != nil {
		return err
	}
	if _, err := r.q.EnqueueMessage(ctx, rc.dl.Body, nil); err != nil {
		_, _ = r.opts.DeadLetter.UpdateMessage(context.WithoutCancel(ctx), rc.dl.ID, rc.pop, rc.text, &sdk.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		return fmt.Errorf("azqueue re-drive %s: %w", id, err)
	}
	return r.deleteReceived(ctx, rc)
}

// DeleteDeadLetter implements queue.DeadLetterBox.
func (r *Receiver) DeleteDeadLetter(ctx context.Context, id string) error {
	rc, err := r.find(ctx, id)
	if err != nil {
		return err
	}
	return r.deleteReceived(ctx, rc)
}

func (r *Receiver) deleteReceived(ctx context.Context, rc received) error {
	if _, err := r.opts.DeadLetter.DeleteMessage(ctx, rc.dl.ID, rc.pop, nil); err != nil && !gone(err) {
		return fmt.Errorf("azqueue dead letter %s: delete: %w", rc.dl.ID, err)
	}
	return nil
}
