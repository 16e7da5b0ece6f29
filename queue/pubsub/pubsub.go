// Package pubsub is the queue.Receiver of a Google Cloud Pub/Sub
// subscription (and of the emulator, pstest in the tests), by synchronous
// pull: ack is Acknowledge, nack and extend are ModifyAckDeadline (0: at
// once), dead-letter is Publish to the dead-letter topic with the reason in
// an attribute, then Acknowledge.
//
// A delivered message's body is the JSON of a Pub/Sub push request
// ({"message":{"attributes":…,"data":base64,"messageId":…,"publishTime":…},
// "subscription":…}), so that a decoder (ingest/gcs) sees the attributes
// that Cloud Storage notifications carry their event type in; its
// Attributes are the message's attributes too.
//
// ReceiveCount is the message's delivery attempt, which Pub/Sub counts
// only on a subscription with a dead-letter policy: give the subscription
// one (its maximum delivery attempts above --max-receives) or every
// delivery counts as the first.
package pubsub

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/geoingest/geoingest/queue"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Options configure a Pub/Sub receiver.
type Options struct {
	// Wait bounds one Pull that finds nothing. Zero means 20 s.
	Wait time.Duration
	// Visibility, when set, is the ack deadline set on every message as
	// it is received (whole seconds, 10 s to 600 s on Pub/Sub); zero keeps
	// the subscription's.
	Visibility time.Duration
	// DeadLetterTopic is the topic (projects/P/topics/T) DeadLetter
	// publishes to; empty means none (queue.ErrNoDeadLetterQueue).
	DeadLetterTopic string
}

// Receiver is a queue.Receiver on one Pub/Sub subscription.
type Receiver struct {
	client *pubsub.Client
	sub    string
	opts   Options
}

// ParseURL splits pubsub://projects/P/subscriptions/S (or
// pubsub://projects/P/topics/T) into the project and the resource name.
func ParseURL(u string) (project, name string, err error) {
	rest, ok := strings.CutPrefix(u, "pubsub://")
	if !ok {
		return "", "", fmt.Errorf("%q is not a pubsub:// URL", u)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || (parts[2] != "subscriptions" && parts[2] != "topics") || parts[3] == "" {
		return "", "", fmt.Errorf("%q: want pubsub://projects/PROJECT/subscriptions/SUBSCRIPTION (or .../topics/TOPIC for a dead-letter topic)", u)
	}
	return parts[1], rest, nil
}

// maxDeadline is the longest ack deadline Pub/Sub accepts.
const maxDeadline = 600 * time.Second

// New returns a receiver on subscription (projects/P/subscriptions/S).
// The client carries the project, endpoint and credentials
// (pubsub.NewClient honours PUBSUB_EMULATOR_HOST and Application Default
// Credentials).
func New(client *pubsub.Client, subscription string, opts Options) *Receiver {
	if opts.Wait <= 0 {
		opts.Wait = 20 * time.Second
	}
	if opts.Visibility > maxDeadline {
		opts.Visibility = maxDeadline
	}
	return &Receiver{client: client, sub: subscription, opts: opts}
}

// handle is one delivery: its ack id, and what DeadLetter republishes.
type handle struct {
	ackID string
	data  []byte
}

// envelope is the body of a delivered message: a Pub/Sub push request.
type envelope struct {
	Message struct {
		Attributes  map[string]string `json:"attributes,omitempty"`
		Data        string            `json:"data,omitempty"`
		MessageID   string            `json:"messageId"`
		PublishTime string            `json:"publishTime,omitempty"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// Receive pulls up to max messages (at most 10), waiting at most Wait
// when there are none.
func (q *Receiver) Receive(ctx context.Context, n int) ([]*queue.Message, error) {
	pctx, cancel := context.WithTimeout(ctx, q.opts.Wait)
	defer cancel()
	out, err := q.client.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{
		Subscription: q.sub, MaxMessages: int32(queue.ClampBatch(n))})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if pctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
			return nil, nil // nothing came within the wait
		}
		return nil, fmt.Errorf("pubsub pull %s: %w", q.sub, err)
	}
	msgs := make([]*queue.Message, 0, len(out.ReceivedMessages))
	var ids []string
	for _, rm := range out.ReceivedMessages {
		pm := rm.GetMessage()
		var env envelope
		env.Message.Attributes = pm.GetAttributes()
		env.Message.MessageID = pm.GetMessageId()
		if len(pm.GetData()) > 0 {
			env.Message.Data = base64.StdEncoding.EncodeToString(pm.GetData())
		}
		if pt := pm.GetPublishTime(); pt != nil {
			env.Message.PublishTime = pt.AsTime().UTC().Format(time.RFC3339Nano)
		}
		env.Subscription = q.sub
		body, err := json.Marshal(env)
		if err != nil {
			return nil, fmt.Errorf("pubsub pull %s: %w", q.sub, err)
		}
		m := &queue.Message{ID: pm.GetMessageId(), Body: body, ReceiveCount: max(1, int(rm.GetDeliveryAttempt())),
			Attributes: map[string]string{}, Handle: handle{ackID: rm.GetAckId(), data: pm.GetData()}}
		for k, v := range pm.GetAttributes() {
			m.Attributes[k] = v
		}
		if pt := pm.GetPublishTime(); pt != nil {
			m.SentAt = pt.AsTime()
		}
		msgs = append(msgs, m)
		ids = append(ids, rm.GetAckId())
	}
	if q.opts.Visibility > 0 && len(ids) > 0 {
		if err := q.modify(ctx, ids, q.opts.Visibility); err != nil {
			// The subscription's own deadline still holds them.
			return msgs, nil
		}
	}
	return msgs, nil
}

func (q *Receiver) modify(ctx context.Context, ackIDs []string, d time.Duration) error {
	if d > maxDeadline {
		d = maxDeadline
	}
	secs := int32((d + time.Second - 1) / time.Second)
	return ignoreExpired(q.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
		Subscription: q.sub, AckIds: ackIDs, AckDeadlineSeconds: secs}))
}

// Ack acknowledges m. An expired ack id is not an error.
func (q *Receiver) Ack(ctx context.Context, m *queue.Message) error {
	h, _ := m.Handle.(handle)
	err := q.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: q.sub, AckIds: []string{h.ackID}})
	if err := ignoreExpired(err); err != nil {
		return fmt.Errorf("pubsub ack %s: %w", m.ID, err)
	}
	return nil
}

// Nack sets m's ack deadline to delay (at most 600 s, Pub/Sub's limit):
// 0 redelivers it at once.
func (q *Receiver) Nack(ctx context.Context, m *queue.Message, delay time.Duration) error {
	h, _ := m.Handle.(handle)
	if err := q.modify(ctx, []string{h.ackID}, delay); err != nil {
		return fmt.Errorf("pubsub nack %s: %w", m.ID, err)
	}
	return nil
}

// Extend sets m's ack deadline to d from now (at most 600 s); the consumer
// renews it every third of its visibility while the job runs.
func (q *Receiver) Extend(ctx context.Context, m *queue.Message, d time.Duration) error {
	h, _ := m.Handle.(handle)
	if err := q.modify(ctx, []string{h.ackID}, max(d, time.Second)); err != nil {
		return fmt.Errorf("pubsub extend %s: %w", m.ID, err)
	}
	return nil
}

// DeadLetter publishes m's data and attributes to the dead-letter topic
// with the reason and the source message id as attributes, then acks m.
// If the publish fails m is left in place (it will be delivered again).
func (q *Receiver) DeadLetter(ctx context.Context, m *queue.Message, reason string) error {
	if q.opts.DeadLetterTopic == "" {
		return queue.ErrNoDeadLetterQueue
	}
	h, _ := m.Handle.(handle)
	attrs := map[string]string{}
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	if len(reason) > 1024 {
		reason = reason[:1024] // Pub/Sub attribute values are at most 1024 bytes
	}
	if reason == "" {
		reason = "unspecified"
	}
	attrs[queue.ReasonAttribute] = reason
	attrs[queue.SourceIDAttribute] = m.ID
	data := h.data
	if len(data) == 0 {
		data = []byte("{}") // a notification of payload format NONE has no data; keep a body
	}
	if _, err := q.client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: q.opts.DeadLetterTopic,
		Messages: []*pubsubpb.PubsubMessage{{Data: data, Attributes: attrs}}}); err != nil {
		return fmt.Errorf("pubsub dead-letter %s: %w", m.ID, err)
	}
	return q.Ack(ctx, m)
}

// Close does nothing: the client is the caller's.
func (q *Receiver) Close() error { return nil }

// ignoreExpired drops the error of an ack or modack whose ack id expired
// (the message was redelivered meanwhile): nothing is left to change.
func ignoreExpired(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.FailedPrecondition:
		if strings.Contains(strings.ToLower(err.Error()), "ack") {
			return nil
		}
	}
	return err
}

// ErrNotFound is wrapped by Check when the subscription or topic does not exist.
var ErrNotFound = errors.New("no such subscription or topic")

// Check asks Pub/Sub for the subscription (and the dead-letter topic when
// given): the start-up check of serve.
func Check(ctx context.Context, client *pubsub.Client, subscription, dlqTopic string) error {
	if _, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subscription}); err != nil {
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%s: %w: %v", subscription, ErrNotFound, err)
		}
		return fmt.Errorf("%s: %w", subscription, err)
	}
	if dlqTopic != "" {
		if _, err := client.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: dlqTopic}); err != nil {
			if status.Code(err) == codes.NotFound {
				return fmt.Errorf("%s: %w: %v", dlqTopic, ErrNotFound, err)
			}
			return fmt.Errorf("%s: %w", dlqTopic, err)
		}
	}
	return nil
}

// Data is the Pub/Sub message data inside a delivered message's body.
func Data(m *queue.Message) ([]byte, error) {
	var env envelope
	if err := json.Unmarshal(m.Body, &env); err != nil {
		return nil, fmt.Errorf("pubsub message %s: %w", m.ID, err)
	}
	return base64.StdEncoding.DecodeString(env.Message.Data)
}
