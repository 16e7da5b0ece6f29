package queue_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/internal/testsupport/testpar"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	// The suites wait on visibility timeouts and long polls (about 8 s of
	// CPU in 90 s of tests): every one at once.
	testpar.Default(16)
	code := m.Run()
	testsrv.Stop()
	os.Exit(code)
}

// harness makes one driver under test.
type harness struct {
	// open returns a fresh, empty receiver whose messages become visible
	// again visibility after receipt (drivers that have a timeout).
	open func(t *testing.T) queue.Receiver
	// send puts a message named name into the receiver's queue and
	// returns the body it will be delivered with.
	send func(t *testing.T, r queue.Receiver, name string) string
	// deadLetters returns the reasons of the dead-lettered messages, by
	// message body.
	deadLetters func(t *testing.T, r queue.Receiver) map[string]string
	// visibility is the driver's visibility timeout, 0 when it has none.
	visibility time.Duration
	// body, when set, is what send's return value is compared with: the
	// payload of a delivered message whose Body wraps it (Pub/Sub).
	body func(t *testing.T, m *queue.Message) string
}

// receiveAll receives until n messages arrived or timeout passed.
func receiveAll(t *testing.T, r queue.Receiver, n int, timeout time.Duration) []*queue.Message {
	t.Helper()
	var got []*queue.Message
	deadline := time.Now().Add(timeout)
	for len(got) < n && time.Now().Before(deadline) {
		msgs, err := r.Receive(context.Background(), n-len(got))
		require.NoError(t, err)
		got = append(got, msgs...)
	}
	return got
}

// requireNone checks that nothing is delivered during d.
func requireNone(t *testing.T, r queue.Receiver, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		msgs, err := r.Receive(context.Background(), 10)
		require.NoError(t, err)
		require.Empty(t, msgs, "a message was delivered that should not have been")
	}
}

// bodies returns the delivered messages' payloads, sorted: h.body of
// each, else its body. (The harness is an argument, not a package
// variable, so that the drivers' suites may run in parallel.)
func (h harness) bodies(msgs []*queue.Message) []string {
	var b []string
	for _, m := range msgs {
		if h.body != nil {
			b = append(b, h.body(nil, m))
			continue
		}
		b = append(b, string(m.Body))
	}
	sort.Strings(b)
	return b
}

// testConformance is the suite that every driver passes.
func testConformance(t *testing.T, h harness) {
	bodies := h.bodies
	t.Run("DeliversEveryMessageOnceThenAckRemoves", func(t *testing.T) {
		r := h.open(t)
		var want []string
		for i := 0; i < 12; i++ {
			want = append(want, h.send(t, r, "m"+strconv.Itoa(i)))
		}
		sort.Strings(want)
		got := receiveAll(t, r, 12, 15*time.Second)
		require.Equal(t, want, bodies(got))
		for _, m := range got {
			require.Equal(t, 1, m.ReceiveCount, "first delivery of %s", m.Body)
			require.NotEmpty(t, m.ID)
			require.NoError(t, r.Ack(context.Background(), m))
		}
		// Past the visibility timeout, an acked message never comes back.
		requireNone(t, r, h.visibility+1500*time.Millisecond)
		// Acking again (an expired handle) is not an error.
		require.NoError(t, r.Ack(context.Background(), got[0]))
	})
	t.Run("ReceiveBatchIsCapped", func(t *testing.T) {
		r := h.open(t)
		for i := 0; i < 12; i++ {
			h.send(t, r, "b"+strconv.Itoa(i))
		}
		time.Sleep(1200 * time.Millisecond) // let the inbox see every file stable
		msgs, err := r.Receive(context.Background(), 50)
		require.NoError(t, err)
		require.LessOrEqual(t, len(msgs), queue.MaxBatch)
		require.NotEmpty(t, msgs)
	})
	t.Run("NackRedeliversWithHigherReceiveCount", func(t *testing.T) {
		r := h.open(t)
		body := h.send(t, r, "nack")
		got := receiveAll(t, r, 1, 10*time.Second)
		require.Len(t, got, 1)
		require.NoError(t, r.Nack(context.Background(), got[0], 0))
		again := receiveAll(t, r, 1, 10*time.Second)
		require.Len(t, again, 1)
		require.Equal(t, []string{body}, bodies(again))
		require.Equal(t, got[0].ID, again[0].ID)
		require.Equal(t, 2, again[0].ReceiveCount)
		require.NoError(t, r.Ack(context.Background(), again[0]))
	})
	t.Run("NackDelayHoldsTheMessageBack", func(t *testing.T) {
		r := h.open(t)
		h.send(t, r, "delay")
		got := receiveAll(t, r, 1, 10*time.Second)
		require.Len(t, got, 1)
		start := time.Now()
		require.NoError(t, r.Nack(context.Background(), got[0], 3*time.Second))
		again := receiveAll(t, r, 1, 15*time.Second)
		require.Len(t, again, 1)
		require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "redelivered before the nack delay")
		require.NoError(t, r.Ack(context.Background(), again[0]))
	})
	t.Run("UnackedMessageComesBack", func(t *testing.T) {
		if h.visibility == 0 {
			t.Skip("the driver holds a delivery until it is acked or nacked: no visibility timeout")
		}
		r := h.open(t)
		h.send(t, r, "lost")
		got := receiveAll(t, r, 1, 10*time.Second)
		require.Len(t, got, 1)
		again := receiveAll(t, r, 1, h.visibility+10*time.Second)
		require.Len(t, again, 1, "a message that was never acked must be delivered again")
		require.Equal(t, 2, again[0].ReceiveCount)
		require.NoError(t, r.Ack(context.Background(), again[0]))
	})
	t.Run("ExtendKeepsTheMessageInvisible", func(t *testing.T) {
		r := h.open(t)
		h.send(t, r, "extend")
		got := receiveAll(t, r, 1, 10*time.Second)
		require.Len(t, got, 1)
		require.NoError(t, r.Extend(context.Background(), got[0], 30*time.Second))
		requireNone(t, r, h.visibility+2*time.Second)
		require.NoError(t, r.Ack(context.Background(), got[0]))
	})
	t.Run("ReceiveReturnsWhenEmptyAndOnCancel", func(t *testing.T) {
		r := h.open(t)
		start := time.Now()
		msgs, err := r.Receive(context.Background(), 10)
		require.NoError(t, err)
		require.Empty(t, msgs)
		require.Less(t, time.Since(start), 5*time.Second, "an empty Receive must return after about the wait")
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		start = time.Now()
		for {
			_, err = r.Receive(ctx, 10)
			if err != nil {
				break
			}
		}
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), 3*time.Second)
	})
	t.Run("DeadLetterMovesTheMessageWithItsReason", func(t *testing.T) {
		r := h.open(t)
		bad := h.send(t, r, "bad")
		good := h.send(t, r, "good")
		got := receiveAll(t, r, 2, 10*time.Second)
		require.Len(t, got, 2)
		for _, m := range got {
			if bodies([]*queue.Message{m})[0] == bad {
				require.NoError(t, r.DeadLetter(context.Background(), m, "parse error: not GeoJSON"))
			} else {
				require.NoError(t, r.Nack(context.Background(), m, 0))
			}
		}
		again := receiveAll(t, r, 1, h.visibility+5*time.Second)
		require.Equal(t, []string{good}, bodies(again), "the nacked message comes back")
		require.NoError(t, r.Ack(context.Background(), again[0]))
		requireNone(t, r, h.visibility+1500*time.Millisecond) // the dead-lettered one does not
		require.Equal(t, map[string]string{bad: "parse error: not GeoJSON"}, h.deadLetters(t, r))
	})
}

func TestConformanceSQS(t *testing.T) {
	t.Parallel()
	srv := testsrv.SQS(t)
	dlqs := map[queue.Receiver]string{}
	urls := map[queue.Receiver]string{}
	testConformance(t, harness{
		visibility: 2 * time.Second,
		open: func(t *testing.T) queue.Receiver {
			url := srv.NewQueue(t, "conf", 2*time.Second)
			dlq := srv.NewQueue(t, "conf-dlq", 30*time.Second)
			r := sqsqueue.New(srv.Client, url, sqsqueue.Options{Wait: time.Second, DeadLetterURL: dlq})
			dlqs[r], urls[r] = dlq, url
			return r
		},
		send: func(t *testing.T, r queue.Receiver, name string) string {
			body := `{"name":"` + name + `"}`
			_, err := srv.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(urls[r]), MessageBody: &body})
			require.NoError(t, err)
			return body
		},
		deadLetters: func(t *testing.T, r queue.Receiver) map[string]string {
			out, err := srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(dlqs[r]), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
			require.NoError(t, err)
			got := map[string]string{}
			for _, m := range out.Messages {
				got[aws.ToString(m.Body)] = aws.ToString(m.MessageAttributes[queue.ReasonAttribute].StringValue)
			}
			return got
		},
	})
	t.Run("NoDeadLetterQueue", func(t *testing.T) {
		r := sqsqueue.New(srv.Client, srv.NewQueue(t, "nodlq", 2*time.Second), sqsqueue.Options{Wait: time.Second})
		err := r.DeadLetter(context.Background(), &queue.Message{ID: "x"}, "why")
		require.True(t, errors.Is(err, queue.ErrNoDeadLetterQueue))
	})
}

func TestConformanceInbox(t *testing.T) {
	t.Parallel()
	testConformance(t, harness{
		open: func(t *testing.T) queue.Receiver {
			r, err := queue.NewInbox(t.TempDir(), queue.InboxOptions{Poll: 200 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			return r
		},
		send: func(t *testing.T, r queue.Receiver, name string) string {
			p := filepath.Join(r.(*queue.Inbox).Dir(), "sub", name+".geojson")
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
			return p
		},
		deadLetters: func(t *testing.T, r queue.Receiver) map[string]string {
			dir := r.(*queue.Inbox).Dir()
			got := map[string]string{}
			dl := filepath.Join(dir, ".dead-letter")
			_ = filepath.Walk(dl, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					rel, _ := filepath.Rel(dl, p)
					b, _ := os.ReadFile(p)
					got[filepath.Join(dir, rel[:len(rel)-len(".reason")])] = string(b[:len(b)-1])
				}
				return nil
			})
			return got
		},
	})
}

// TestInboxChangedFileIsDeliveredAgain: a file rewritten after it was
// acked is a new message; an unchanged file is not.
func TestInboxChangedFileIsDeliveredAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 100 * time.Millisecond})
	require.NoError(t, err)
	p := filepath.Join(dir, "a.geojson")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	got := receiveAll(t, r, 1, 5*time.Second)
	require.Len(t, got, 1)
	require.NoError(t, r.Ack(context.Background(), got[0]))
	requireNone(t, r, time.Second)
	require.NoError(t, os.WriteFile(p, []byte("two!"), 0o644))
	again := receiveAll(t, r, 1, 5*time.Second)
	require.Len(t, again, 1)
	require.Equal(t, p, string(again[0].Body))
	require.Equal(t, 1, again[0].ReceiveCount, "a new version starts a new count")

	// A new receiver on the same directory (a restart) delivers it again.
	r2, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, receiveAll(t, r2, 1, 5*time.Second), 1)
}
