package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	azq "github.com/geoingest/geoingest/queue/azqueue"
	"github.com/stretchr/testify/require"
)

// TestConformanceAzureQueue runs the driver suite against Azurite's Queue
// service, with a 2 s visibility timeout and a dead-letter queue.
func TestConformanceAzureQueue(t *testing.T) {
	t.Parallel()
	srv := testsrv.Azurite(t)
	queues := map[queue.Receiver]*sdk.QueueClient{}
	dlqs := map[queue.Receiver]*sdk.QueueClient{}
	testConformance(t, harness{
		visibility: 2 * time.Second,
		open: func(t *testing.T) queue.Receiver {
			q, dlq := srv.NewQueue(t, "conf"), srv.NewQueue(t, "conf-dlq")
			r := azq.New(q, azq.Options{Wait: time.Second, Poll: 200 * time.Millisecond, Visibility: 2 * time.Second, DeadLetter: dlq})
			queues[r], dlqs[r] = q, dlq
			return r
		},
		send: func(t *testing.T, r queue.Receiver, name string) string {
			body := `{"name":"` + name + `"}`
			_, err := queues[r].EnqueueMessage(context.Background(), body, nil)
			require.NoError(t, err)
			return body
		},
		deadLetters: func(t *testing.T, r queue.Receiver) map[string]string {
			out, err := dlqs[r].DequeueMessages(context.Background(), &sdk.DequeueMessagesOptions{NumberOfMessages: ptr(int32(32))})
			require.NoError(t, err)
			got := map[string]string{}
			for _, m := range out.Messages {
				var dl azq.DeadLetterBody
				require.NoError(t, json.Unmarshal([]byte(*m.MessageText), &dl))
				got[dl.Message] = dl.Reason
			}
			return got
		},
	})
	t.Run("NoDeadLetterQueue", func(t *testing.T) {
		r := azq.New(srv.NewQueue(t, "nodlq"), azq.Options{Wait: time.Second})
		err := r.DeadLetter(context.Background(), &queue.Message{ID: "x"}, "why")
		require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue))
		_, err = r.DeadLetterDepth(context.Background())
		require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue))
	})
	t.Run("DeadLetterDepth", func(t *testing.T) {
		q, dlq := srv.NewQueue(t, "depth"), srv.NewQueue(t, "depth-dlq")
		r := azq.New(q, azq.Options{Wait: time.Second, Poll: 200 * time.Millisecond, DeadLetter: dlq})
		n, err := r.DeadLetterDepth(context.Background())
		require.NoError(t, err)
		require.Zero(t, n)
		for i := 0; i < 2; i++ {
			_, err := q.EnqueueMessage(context.Background(), "bad", nil)
			require.NoError(t, err)
		}
		for _, m := range receiveAll(t, r, 2, 10*time.Second) {
			require.NoError(t, r.DeadLetter(context.Background(), m, "why"))
		}
		n, err = r.DeadLetterDepth(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
	})
	t.Run("URL", func(t *testing.T) {
		a, q, err := azq.ParseURL("azqueue://acct/events")
		require.NoError(t, err)
		require.Equal(t, [2]string{"acct", "events"}, [2]string{a, q})
		for _, bad := range []string{"azqueue://acct", "azqueue:///q", "pubsub://a/b", "azqueue://a/b/c"} {
			_, _, err := azq.ParseURL(bad)
			require.Error(t, err, bad)
		}
	})
}

func ptr[T any](v T) *T { return &v }
