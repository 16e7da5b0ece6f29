package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
	"github.com/stretchr/testify/require"
)

// TestSQSDeadLetterDepth: the SQS receiver counts what its dead-letter
// queue holds (0, then the messages dead-lettered), and says when it has
// none; the inbox is not a DeadLetterDepther.
func TestSQSDeadLetterDepth(t *testing.T) {
	t.Parallel()
	srv := testsrv.SQS(t)
	ctx := context.Background()
	url := srv.NewQueue(t, "depth", 30*time.Second)
	dlq := srv.NewQueue(t, "depth-dlq", 30*time.Second)
	r := sqsqueue.New(srv.Client, url, sqsqueue.Options{Wait: time.Second, DeadLetterURL: dlq})
	var d queue.DeadLetterDepther = r
	n, err := d.DeadLetterDepth(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), n)

	for i := range 3 {
		_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	msgs := receiveAll(t, r, 3, 10*time.Second)
	require.Len(t, msgs, 3)
	for _, m := range msgs[:2] {
		require.NoError(t, r.DeadLetter(ctx, m, "permanent"))
	}
	n, err = d.DeadLetterDepth(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)

	_, err = sqsqueue.New(srv.Client, url, sqsqueue.Options{}).DeadLetterDepth(ctx)
	require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue), "%v", err)

	box, err := queue.NewInbox(t.TempDir(), queue.InboxOptions{})
	require.NoError(t, err)
	_, ok := any(box).(queue.DeadLetterDepther)
	require.False(t, ok)
}
