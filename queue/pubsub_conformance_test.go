package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	pubsubqueue "github.com/geoingest/geoingest/queue/pubsub"
	"github.com/stretchr/testify/require"
)

// TestConformancePubSub runs the driver suite against the Pub/Sub
// emulator: a subscription with a 2 s ack deadline and a dead-letter
// policy (so that delivery attempts are counted), and a dead-letter topic
// read through a subscription of its own.
func TestConformancePubSub(t *testing.T) {
	t.Parallel()
	srv := testsrv.GCP(t)
	topics := map[queue.Receiver]string{}
	dlqSubs := map[queue.Receiver]string{}
	testConformance(t, harness{
		visibility: 2 * time.Second,
		open: func(t *testing.T) queue.Receiver {
			topic := srv.NewTopic(t, "conf")
			dlq := srv.NewTopic(t, "conf-dlq")
			dlqSub := srv.NewSubscription(t, dlq, 30*time.Second, "")
			sub := srv.NewSubscription(t, topic, 2*time.Second, dlq)
			r := pubsubqueue.New(srv.Pubsub, sub, pubsubqueue.Options{Wait: time.Second, DeadLetterTopic: dlq})
			topics[r], dlqSubs[r] = topic, dlqSub
			return r
		},
		send: func(t *testing.T, r queue.Receiver, name string) string {
			body := `{"name":"` + name + `"}`
			_, err := srv.Pubsub.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: topics[r],
				Messages: []*pubsubpb.PubsubMessage{{Data: []byte(body), Attributes: map[string]string{"name": name}}}})
			require.NoError(t, err)
			return body
		},
		body: pubsubData,
		deadLetters: func(t *testing.T, r queue.Receiver) map[string]string {
			d := pubsubqueue.New(srv.Pubsub, dlqSubs[r], pubsubqueue.Options{Wait: time.Second})
			got := map[string]string{}
			for _, m := range receiveAll(t, d, 10, 2*time.Second) {
				got[pubsubData(t, m)] = m.Attributes[queue.ReasonAttribute]
				require.NoError(t, d.Ack(context.Background(), m))
			}
			return got
		},
	})
	t.Run("NoDeadLetterTopic", func(t *testing.T) {
		r := pubsubqueue.New(srv.Pubsub, srv.NewSubscription(t, srv.NewTopic(t, "nodlq"), 2*time.Second, ""), pubsubqueue.Options{Wait: time.Second})
		err := r.DeadLetter(context.Background(), &queue.Message{ID: "x"}, "why")
		require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue))
	})
	t.Run("URL", func(t *testing.T) {
		p, name, err := pubsubqueue.ParseURL("pubsub://projects/p1/subscriptions/s1")
		require.NoError(t, err)
		require.Equal(t, "p1", p)
		require.Equal(t, "projects/p1/subscriptions/s1", name)
		for _, bad := range []string{"sqs://x", "pubsub://projects/p1", "pubsub://projects//subscriptions/s", "pubsub://p/p1/subscriptions/s"} {
			_, _, err := pubsubqueue.ParseURL(bad)
			require.Error(t, err, bad)
		}
	})
}

// pubsubData is the data of a message as the driver delivers it (inside
// the push-request JSON of its body).
func pubsubData(t *testing.T, m *queue.Message) string {
	b, err := pubsubqueue.Data(m)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	return string(b)
}
