// Package sqs is the queue.Receiver of Amazon SQS (and compatible servers:
// fauxqs in the tests): ack is DeleteMessage, nack and extend are
// ChangeMessageVisibility, dead-letter is SendMessage to the dead-letter
// queue with the reason in an attribute, then DeleteMessage.
package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/internal/awserr"
	"github.com/geoingest/geoingest/queue"
)

// Options configure an SQS receiver.
type Options struct {
	// Wait is the long-poll wait of one ReceiveMessage (rounded down to
	// whole seconds, at most 20 s). Zero means 20 s.
	Wait time.Duration
	// Visibility, when set, is the visibility timeout asked for on
	// receive (whole seconds); zero keeps the queue's default.
	Visibility time.Duration
	// DeadLetterURL is the queue that DeadLetter sends to; empty means
	// none (DeadLetter returns queue.ErrNoDeadLetterQueue).
	DeadLetterURL string
}

// Receiver is a queue.Receiver on an Amazon SQS queue (or a compatible server).
type Receiver struct {
	client *awssqs.Client
	url    string
	opts   Options
	once   sync.Once
}

// New returns a receiver on the queue at url. The client carries the
// endpoint, region and credentials (config.LoadDefaultConfig honours
// AWS_ENDPOINT_URL_SQS, AWS_REGION and the credential chain).
func New(client *awssqs.Client, url string, opts Options) *Receiver {
	if opts.Wait <= 0 || opts.Wait > 20*time.Second {
		opts.Wait = 20 * time.Second
	}
	return &Receiver{client: client, url: url, opts: opts}
}

// Receive long-polls for up to max messages (at most 10). It returns the
// transport's error wrapped, or ctx.Err() when ctx is done.
func (q *Receiver) Receive(ctx context.Context, max int) ([]*queue.Message, error) {
	in := &awssqs.ReceiveMessageInput{
		QueueUrl:                    &q.url,
		MaxNumberOfMessages:         int32(queue.ClampBatch(max)),
		WaitTimeSeconds:             int32(q.opts.Wait / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
	if q.opts.Visibility > 0 {
		in.VisibilityTimeout = int32(q.opts.Visibility.Round(time.Second) / time.Second)
	}
	received := time.Now()
	out, err := q.client.ReceiveMessage(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	msgs := make([]*queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msg := &queue.Message{ID: aws.ToString(m.MessageId), Body: []byte(aws.ToString(m.Body)),
			ReceiveCount: 1, Attributes: map[string]string{}, Handle: sqsHandle{receipt: aws.ToString(m.ReceiptHandle), received: received}}
		if n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil && n > 0 {
			msg.ReceiveCount = n
		}
		if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			msg.SentAt = time.UnixMilli(ms)
		}
		for k, v := range m.MessageAttributes {
			if v.StringValue != nil {
				msg.Attributes[k] = *v.StringValue
			}
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// sqsHandle is an SQS delivery: its receipt handle, and when the receive
// that returned it was sent.
type sqsHandle struct {
	receipt  string
	received time.Time
}

// maxVisibility is the longest SQS keeps a received message invisible:
// 12 hours from the receive (ChangeMessageVisibility refuses more).
const maxVisibility = 12 * time.Hour

// Ack deletes m. An invalid or expired receipt handle is not an error.
func (q *Receiver) Ack(ctx context.Context, m *queue.Message) error {
	hd, _ := m.Handle.(sqsHandle)
	h := hd.receipt
	_, err := q.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: &h})
	if err != nil && !expiredHandle(err) {
		return fmt.Errorf("sqs delete %s: %w", m.ID, err)
	}
	return nil
}

// Nack makes m visible again after delay, capped at what SQS allows: 12
// hours from the receive.
func (q *Receiver) Nack(ctx context.Context, m *queue.Message, delay time.Duration) error {
	if err := q.visibility(ctx, m, delay); err != nil {
		return fmt.Errorf("sqs nack %s: %w", m.ID, err)
	}
	return nil
}

// Extend keeps m invisible for d from now, capped like Nack's delay.
func (q *Receiver) Extend(ctx context.Context, m *queue.Message, d time.Duration) error {
	if err := q.visibility(ctx, m, d); err != nil {
		return fmt.Errorf("sqs extend %s: %w", m.ID, err)
	}
	return nil
}

func (q *Receiver) visibility(ctx context.Context, m *queue.Message, d time.Duration) error {
	hd, _ := m.Handle.(sqsHandle)
	secs := visibilitySeconds(d, time.Since(hd.received))
	h := hd.receipt
	_, err := q.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl: &q.url, ReceiptHandle: &h, VisibilityTimeout: secs})
	if err != nil && expiredHandle(err) {
		return nil // redelivered already: nothing left to change
	}
	return err
}

// visibilitySeconds is d in whole seconds (rounded up), capped at what is
// left of SQS's 12 hours for a message received age ago, less a second
// for the time the request takes.
func visibilitySeconds(d, age time.Duration) int32 {
	if left := (maxVisibility - age - time.Second).Truncate(time.Second); d > left {
		d = left
	}
	if d < 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}

// DeadLetter sends m's body and attributes to the dead-letter queue with
// the reason and the source message id as attributes, then deletes m.
// If the send fails m is left in place (it will be delivered again).
func (q *Receiver) DeadLetter(ctx context.Context, m *queue.Message, reason string) error {
	if q.opts.DeadLetterURL == "" {
		return queue.ErrNoDeadLetterQueue
	}
	attrs := map[string]types.MessageAttributeValue{}
	for k, v := range m.Attributes {
		if k == queue.ReasonAttribute || k == queue.SourceIDAttribute || len(attrs) >= 8 {
			continue // SQS allows 10 attributes
		}
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if len(reason) > 4096 {
		reason = reason[:4096]
	}
	if reason == "" {
		reason = "unspecified"
	}
	attrs[queue.ReasonAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(reason)}
	attrs[queue.SourceIDAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.ID)}
	body := string(m.Body)
	if _, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl: &q.opts.DeadLetterURL, MessageBody: &body, MessageAttributes: attrs}); err != nil {
		return fmt.Errorf("sqs dead-letter %s: %w", m.ID, err)
	}
	return q.Ack(ctx, m)
}

// Close does nothing: the client holds no per-receiver resources.
func (q *Receiver) Close() error { return nil }

// expiredHandle reports whether err says the receipt handle is no longer
// valid: the message was deleted or redelivered meanwhile.
func expiredHandle(err error) bool {
	var rh *types.ReceiptHandleIsInvalid
	var nf *types.MessageNotInflight
	if errors.As(err, &rh) || errors.As(err, &nf) {
		return true
	}
	switch awserr.Code(err) {
	case "ReceiptHandleIsInvalid", "InvalidParameterValue", "MessageNotInflight",
		"AWS.SimpleQueueService.MessageNotInflight":
		return true
	}
	return false
}
