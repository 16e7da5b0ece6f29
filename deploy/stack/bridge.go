package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/internal/testsupport/vgwnotify"
)

// runBridge serves versitygw's webhook: every POSTed notification is sent to
// the queue (found by name, so the bridge may start before the queue
// exists), with its object keys URL-encoded as AWS encodes them
// (vgwnotify.AWSKeys). versitygw sends each notification once and does not look
// at the answer, so the bridge answers 202 at once and keeps retrying the
// send for --patience; a notification it could not send in that time is
// logged at ERROR. /healthz answers 200 while the bridge runs.
func runBridge(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	addr := fs.String("listen", env("STACK_LISTEN", ":8080"), "address of the webhook (POST /events) and /healthz (env STACK_LISTEN)")
	queue := fs.String("queue", env("STACK_QUEUE", "uploads"), "name of the queue to send the notifications to (env STACK_QUEUE)")
	patience := fs.Duration("patience", 5*time.Minute, "how long to retry sending one notification")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	b := &bridge{log: log, sqs: sqs.NewFromConfig(cfg), queue: *queue, patience: *patience, ctx: ctx}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /events", b.serveEvent)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("bridge: listening", "addr", *addr, "queue", *queue)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	b.wg.Wait()
	return nil
}

type bridge struct {
	log      *slog.Logger
	sqs      *sqs.Client
	queue    string
	patience time.Duration
	ctx      context.Context
	wg       sync.WaitGroup

	mu       sync.Mutex
	queueURL string
}

func (b *bridge) serveEvent(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := vgwnotify.AWSKeys(raw)
	if err != nil {
		b.log.Error("bridge: not an S3 notification", "error", err.Error(), "body", string(raw))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := retry(b.ctx, b.patience, func() error { return b.send(body) })
		if err != nil {
			b.log.Error("bridge: notification not sent", "error", err.Error(), "body", body)
			return
		}
		b.log.Info("bridge: sent", "keys", strings.Join(eventKeys(body), " "))
	}()
}

// send sends body to the queue, looking its URL up on first use.
func (b *bridge) send(body string) error {
	b.mu.Lock()
	qURL := b.queueURL
	b.mu.Unlock()
	if qURL == "" {
		out, err := b.sqs.GetQueueUrl(b.ctx, &sqs.GetQueueUrlInput{QueueName: &b.queue})
		if err != nil {
			return fmt.Errorf("queue %s: %w", b.queue, err)
		}
		qURL = aws.ToString(out.QueueUrl)
		b.mu.Lock()
		b.queueURL = qURL
		b.mu.Unlock()
	}
	_, err := b.sqs.SendMessage(b.ctx, &sqs.SendMessageInput{QueueUrl: &qURL, MessageBody: &body})
	return err
}

// eventKeys returns the object keys a notification names, for the log.
func eventKeys(body string) []string {
	var n struct {
		Event   string
		Records []struct {
			S3 struct{ Object struct{ Key string } } `json:"s3"`
		}
	}
	if json.Unmarshal([]byte(body), &n) != nil {
		return nil
	}
	if n.Event != "" {
		return []string{n.Event}
	}
	var keys []string
	for _, r := range n.Records {
		keys = append(keys, r.S3.Object.Key)
	}
	return keys
}
