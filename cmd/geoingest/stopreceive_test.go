package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// TestServeStopGivesBackItsLastReceive: a serve stopped (SIGTERM) while
// its long poll waits lets that poll end and gives back at once what it
// returned. Cut instead, the abandoned request is still handed the next
// message by the queue (fauxqs, and SQS), and the message stays invisible
// for the whole visibility timeout asked on receive (60 s here): that was
// the minute-long tail of scripts/bench-failover.sh with 2 and 4 serves,
// whose first message of each round went to the previous round's stopped
// serve. Here a message sent right after the SIGTERM is received again
// within seconds.
func TestServeStopGivesBackItsLastReceive(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "stopreceive")
	w := c.serve(t, nil, "--metrics-addr", "127.0.0.1:0", "--wait", "4s", "--visibility", "60s")
	addr := ""
	eventually(t, 2*time.Minute, "serve receiving", func() bool {
		addr = listenAddr(w.stderr.String())
		return addr != "" && strings.Contains(w.stderr.String(), "msg=serving") && readyz(addr) == http.StatusOK
	})
	// Its long poll (4 s) is waiting on the empty queue: it began as serve
	// logged that it serves, however slowly a loaded machine started it.
	time.Sleep(time.Second)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	// Send once the shutdown has begun (/readyz 503), not merely once the
	// signal is sent: a message received before serve has seen its signal
	// is an ordinary delivery, handled and acked like any other.
	eventually(t, 30*time.Second, "serve unready after SIGTERM", func() bool { return readyz(addr) == http.StatusServiceUnavailable })
	sendBody(t, c.sqs.Client, c.queueURL, `{"Records":[]}`)
	select {
	case <-w.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
	ctx := context.Background()
	start := time.Now()
	var got int
	for time.Since(start) < 20*time.Second && got == 0 {
		out, err := c.sqs.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &c.queueURL, WaitTimeSeconds: 1, MaxNumberOfMessages: 10})
		require.NoError(t, err)
		got = len(out.Messages)
	}
	require.Equal(t, 1, got, "the message sent as serve stopped is visible again at once, not after its 60 s visibility:\n%s", w.stderr.String())
	t.Logf("received again %.1fs after serve stopped", time.Since(start).Seconds())
}
