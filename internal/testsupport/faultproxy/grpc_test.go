package faultproxy_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestGRPCPubSubFaults runs the Pub/Sub emulator's own API through the
// gRPC proxy, with no client retries: every call passes through whole, and
// each fault does what it says: INTERNAL and UNAVAILABLE before upstream
// acts, UNAVAILABLE after it acted (a publish or an acknowledgement that
// happened although the client saw it fail), latency.
func TestGRPCPubSubFaults(t *testing.T) {
	ctx := context.Background()
	g := testsrv.GCP(t)
	topic := g.NewTopic(t, "faults")
	sub := g.NewSubscription(t, topic, 10*time.Second, "")
	p, err := faultproxy.NewGRPC(g.PubsubHost, faultproxy.Options{Latency: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	conn, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	pub, subs := pubsubpb.NewPublisherClient(conn), pubsubpb.NewSubscriberClient(conn)
	published := func() int {
		n := 0
		for _, m := range g.Published() {
			if m.Attributes["test"] == t.Name() {
				n++
			}
		}
		return n
	}
	publish := func(data string) error {
		_, err := pub.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic,
			Messages: []*pubsubpb.PubsubMessage{{Data: []byte(data), Attributes: map[string]string{"test": t.Name()}}}})
		return err
	}

	p.Arm("Publish", faultproxy.Error500)
	require.Equal(t, codes.Internal, status.Code(publish("a")))
	p.Arm("Publish", faultproxy.SlowDown)
	require.Equal(t, codes.Unavailable, status.Code(publish("a")))
	require.Zero(t, published(), "a call failed before upstream acted")
	p.Arm("Publish", faultproxy.Reset)
	require.Equal(t, codes.Unavailable, status.Code(publish("a")))
	require.Equal(t, 1, published(), "a call failed after upstream acted")

	// Pull passes through whole; an error from upstream does too.
	got, err := subs.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub, MaxMessages: 10})
	require.NoError(t, err)
	require.Len(t, got.ReceivedMessages, 1)
	require.Equal(t, "a", string(got.ReceivedMessages[0].Message.Data))
	_, err = subs.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub + "-none"})
	require.Equal(t, codes.NotFound, status.Code(err))

	p.Arm("Acknowledge", faultproxy.Reset)
	_, err = subs.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub, AckIds: []string{got.ReceivedMessages[0].AckId}})
	require.Equal(t, codes.Unavailable, status.Code(err))
	acked := false
	for _, m := range g.Published() {
		if m.Attributes["test"] == t.Name() {
			acked = m.Acks > 0
		}
	}
	require.True(t, acked, "the acknowledgement reached the emulator although the client saw it fail")

	p.Arm("GetTopic", faultproxy.Latency)
	t0 := time.Now()
	_, err = pub.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: topic})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(t0), 300*time.Millisecond)

	p.Arm("ModifyAckDeadline", faultproxy.Stall)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = subs.ModifyAckDeadline(sctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub, AckIds: []string{"x"}, AckDeadlineSeconds: 10})
	cancel()
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))

	require.Equal(t, map[faultproxy.Kind]int{faultproxy.Error500: 1, faultproxy.SlowDown: 1, faultproxy.Reset: 2,
		faultproxy.Latency: 1, faultproxy.Stall: 1}, p.KindCounts())
}
