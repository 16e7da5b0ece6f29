package sqs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/queue"
)

var _ queue.DeadLetterBox = (*Receiver)(nil)

// SQS has no way to read a queue but to receive from it: the dead letters
// are received with a short visibility timeout (scanVisibility), looked
// at, and made visible again at once (ChangeMessageVisibility 0), except
// the one acted on. Each look adds one to a dead letter's receive count;
// give the dead-letter queue no redrive policy of its own.

// scanVisibility is how long a dead letter being looked at stays hidden if
// the look is cut before it gives the message back.
const scanVisibility = 30 * time.Second

// scanned is a dead letter received from the dead-letter queue, with its
// receipt handle.
type scanned struct {
	dl      queue.DeadLetter
	receipt string
}

// scan receives dead letters until it has max of them, or found the one
// named stop ("" for none; it is then the last returned), or the queue
// gives no more. The caller gives them back (release).
func (q *Receiver) scan(ctx context.Context, max int, stop string) ([]scanned, error) {
	if q.opts.DeadLetterURL == "" {
		return nil, queue.ErrNoDeadLetterQueue
	}
	var got []scanned
	seen := map[string]bool{}
	for len(got) < max {
		out, err := q.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: &q.opts.DeadLetterURL, MaxNumberOfMessages: int32(min(10, max-len(got))),
			WaitTimeSeconds: 1, VisibilityTimeout: int32(scanVisibility / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"}})
		if err != nil {
			return got, fmt.Errorf("sqs dead letters: %w", err)
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id], fresh = true, fresh+1
			dl := queue.DeadLetter{ID: id, Body: aws.ToString(m.Body), Attributes: map[string]string{}}
			for k, v := range m.MessageAttributes {
				switch {
				case v.StringValue == nil:
				case k == queue.ReasonAttribute:
					dl.Reason = *v.StringValue
				case k == queue.SourceIDAttribute:
					dl.SourceID = *v.StringValue
				default:
					dl.Attributes[k] = *v.StringValue
				}
			}
			if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
				dl.SentAt = time.UnixMilli(ms)
			}
			dl.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
			got = append(got, scanned{dl: dl, receipt: aws.ToString(m.ReceiptHandle)})
		}
		// The one named goes last, after the rest of its batch (which the
		// caller gives back).
		for i, s := range got {
			if s.dl.ID == stop && stop != "" {
				got = append(append(got[:i:i], got[i+1:]...), s)
				return got, nil
			}
		}
		if fresh == 0 {
			break
		}
	}
	return got, nil
}

// release makes the scanned dead letters visible again at once, but skip.
func (q *Receiver) release(ctx context.Context, got []scanned, skip string) {
	ctx = context.WithoutCancel(ctx)
	for _, s := range got {
		if s.dl.ID == skip {
			continue
		}
		h := s.receipt
		// A failure leaves it hidden for scanVisibility at most.
		// A failure leaves it hidden for scanVisibility at most.
		_, _ = q.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
			QueueUrl: &q.opts.DeadLetterURL, ReceiptHandle: &h, VisibilityTimeout: 0})
	}
}

// DeadLetters implements queue.DeadLetterBox, oldest first by the time
// each was dead-lettered.
func (q *Receiver) DeadLetters(ctx context.Context, max int) ([]queue.DeadLetter, error) {
	got, err := q.scan(ctx, queue.ClampDeadLetters(max), "")
	q.release(ctx, got, "")
	if err != nil {
		return nil, err
	}
	out := make([]queue.DeadLetter, 0, len(got))
	for _, s := range got {
		out = append(out, s.dl)
	}
	queue.SortDeadLetters(out)
	return out, nil
}

// find scans for the dead letter id and gives the others back.
func (q *Receiver) find(ctx context.Context, id string) (scanned, error) {
	got, err := q.scan(ctx, queue.MaxDeadLetters, id)
	q.release(ctx, got, id)
	if err != nil {
		return scanned{}, err
	}
	if n := len(got); n > 0 && got[n-1].dl.ID == id {
		return got[n-1], nil
	}
	return scanned{}, fmt.Errorf("sqs dead letter %s: %w", id, queue.ErrNoSuchDeadLetter)
}

// RedriveDeadLetter implements queue.DeadLetterBox: SendMessage of the
// original body and attributes to the source queue, then DeleteMessage
// from the dead-letter queue.
func (q *Receiver) RedriveDeadLetter(ctx context.Context, id string) error {
	s, err := q.find(ctx, id)
	if err != nil {
		return err
	}
	attrs := map[string]types.MessageAttributeValue{}
	for k, v := range s.dl.Attributes {
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	body := s.dl.Body
	if _, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: &q.url, MessageBody: &body, MessageAttributes: attrs}); err != nil {
		q.release(ctx, []scanned{s}, "")
		return fmt.Errorf("sqs re-drive %s: %w", id, err)
	}
	return q.deleteScanned(ctx, s)
}

// DeleteDeadLetter implements queue.DeadLetterBox.
func (q *Receiver) DeleteDeadLetter(ctx context.Context, id string) error {
	s, err := q.find(ctx, id)
	if err != nil {
		return err
	}
	return q.deleteScanned(ctx, s)
}

func (q *Receiver) deleteScanned(ctx context.Context, s scanned) error {
	h := s.receipt
	if _, err := q.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: &q.opts.DeadLetterURL, ReceiptHandle: &h}); err != nil {
		return fmt.Errorf("sqs dead letter %s: delete: %w", s.dl.ID, err)
	}
	return nil
}
