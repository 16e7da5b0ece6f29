package queue_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	azq "github.com/geoingest/geoingest/queue/azqueue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
	"github.com/stretchr/testify/require"
)

// testDeadLetterBox is the suite of a queue.DeadLetterBox: three messages
// are dead-lettered with their reasons; the listing shows them (twice in
// a row: a listing hides nothing for long); a re-drive puts one back in
// the source queue, where it is delivered with its body, and a second
// re-drive of it finds nothing; a delete removes another for good; an
// unknown id is ErrNoSuchDeadLetter.
func testDeadLetterBox(t *testing.T, r queue.Receiver, send func(name string) string) {
	ctx := context.Background()
	box := r.(queue.DeadLetterBox)
	want := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		want[send(n)] = "reason of " + n
	}
	for _, m := range receiveAll(t, r, 3, 20*time.Second) {
		require.NoError(t, r.DeadLetter(ctx, m, want[string(m.Body)]))
	}
	list := func() map[string]queue.DeadLetter {
		t.Helper()
		dls, err := box.DeadLetters(ctx, 10)
		require.NoError(t, err)
		got := map[string]queue.DeadLetter{}
		for _, dl := range dls {
			got[dl.Body] = dl
		}
		return got
	}
	var dls map[string]queue.DeadLetter
	eventually := func(n int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for dls = list(); len(dls) != n && time.Now().Before(deadline); dls = list() {
			time.Sleep(200 * time.Millisecond)
		}
		require.Len(t, dls, n)
	}
	eventually(3)
	for body, dl := range dls {
		require.Equal(t, want[body], dl.Reason)
		require.NotEmpty(t, dl.SourceID)
	}
	eventually(3) // the listing gave them back
	bodies := make([]string, 0, 3)
	for b := range want {
		bodies = append(bodies, b)
	}
	sort.Strings(bodies)

	require.NoError(t, box.RedriveDeadLetter(ctx, dls[bodies[0]].ID))
	back := receiveAll(t, r, 1, 20*time.Second)
	require.Len(t, back, 1)
	require.Equal(t, bodies[0], string(back[0].Body), "re-driven with its body")
	require.NoError(t, r.Ack(ctx, back[0]))
	err := box.RedriveDeadLetter(ctx, dls[bodies[0]].ID)
	require.True(t, errors.Is(err, queue.ErrNoSuchDeadLetter), "a second re-drive does nothing: %v", err)

	require.NoError(t, box.DeleteDeadLetter(ctx, dls[bodies[1]].ID))
	require.True(t, errors.Is(box.DeleteDeadLetter(ctx, dls[bodies[1]].ID), queue.ErrNoSuchDeadLetter))
	require.True(t, errors.Is(box.RedriveDeadLetter(ctx, "no-such-id"), queue.ErrNoSuchDeadLetter))
	eventually(1)
	require.Contains(t, dls, bodies[2])
	requireNone(t, r, 1500*time.Millisecond) // the deleted one went nowhere
}

func TestDeadLetterBoxSQS(t *testing.T) {
	t.Parallel()
	srv := testsrv.SQS(t)
	url := srv.NewQueue(t, "dlbox", 2*time.Second)
	dlq := srv.NewQueue(t, "dlbox-dlq", 30*time.Second)
	r := sqsqueue.New(srv.Client, url, sqsqueue.Options{Wait: time.Second, DeadLetterURL: dlq})
	testDeadLetterBox(t, r, func(name string) string {
		body := `{"name":"` + name + `"}`
		_, err := srv.Client.SendMessage(context.Background(), sqsSend(url, body))
		require.NoError(t, err)
		return body
	})
	_, err := sqsqueue.New(srv.Client, url, sqsqueue.Options{Wait: time.Second}).DeadLetters(context.Background(), 10)
	require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue))
}

func TestDeadLetterBoxAzureQueue(t *testing.T) {
	t.Parallel()
	srv := testsrv.Azurite(t)
	q, dlq := srv.NewQueue(t, "dlbox"), srv.NewQueue(t, "dlbox-dlq")
	r := azq.New(q, azq.Options{Wait: time.Second, Poll: 200 * time.Millisecond, Visibility: 2 * time.Second, DeadLetter: dlq})
	testDeadLetterBox(t, r, func(name string) string {
		body := `{"name":"` + name + `"}`
		_, err := q.EnqueueMessage(context.Background(), body, nil)
		require.NoError(t, err)
		return body
	})
}

func sqsSend(url, body string) *sqs.SendMessageInput {
	return &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: &body}
}

func TestDeadLetterBoxInbox(t *testing.T) {
	t.Parallel()
	r, err := queue.NewInbox(t.TempDir(), queue.InboxOptions{Poll: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	testDeadLetterBox(t, r, func(name string) string {
		p := filepath.Join(r.Dir(), "sub", name+".geojson")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
		return p
	})
	for _, id := range []string{"../x", "/etc/passwd", ""} {
		require.True(t, errors.Is(r.RedriveDeadLetter(context.Background(), id), queue.ErrNoSuchDeadLetter), id)
	}
}
