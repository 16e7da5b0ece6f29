package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// webhookSecret is the webhooks' HMAC key: the file --webhook-secret-file
// names, else GEOINGEST_WEBHOOK_SECRET (never a flag's value, which
// every user of the machine can read in the process list). Empty: the
// POSTs are not signed.
func webhookSecret(m *Main, file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file: %w", err)
		}
		return []byte(strings.TrimSpace(string(b))), nil
	}
	return []byte(m.Getenv("GEOINGEST_WEBHOOK_SECRET")), nil
}

// webhookHolder names this process as a subscriber's lease holder.
func webhookHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// startWebhooks starts one deliverer per distinct webhook URL of routes
// (and defaultURL, for the routes that name none), each a durable
// consumer of the change feed (ingest.Webhook). stop ends them and waits;
// with drain (serve stopping because it is idle, not on a signal), each
// then makes a last pass (ingest.Webhook.Drain, within drainTimeout), so
// that a batch run ends with what it committed delivered or tried.
func startWebhooks(ctx context.Context, m *Main, store any, routes []ingest.Route, defaultURL string, secret []byte) (stop func(drain bool), err error) {
	urls := map[string]bool{}
	if defaultURL != "" {
		if _, err := ingest.ParseWebhookURL(defaultURL); err != nil {
			return nil, err
		}
		urls[defaultURL] = true
	}
	for _, r := range routes {
		if u := r.Options.Downstream.Webhook; u != "" {
			urls[u] = true
		}
	}
	if len(urls) == 0 {
		return func(bool) {}, nil
	}
	feed, ok1 := store.(ingest.ChangeLog)
	subs, ok2 := store.(ingest.Subscribers)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("webhooks: this store keeps no change feed")
	}
	tiles, _ := store.(ingest.TileExpiry)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	holder := webhookHolder()
	var hooks []*ingest.Webhook
	for u := range urls {
		w := &ingest.Webhook{URL: u, Secret: secret, Select: ingest.WebhookSelect(routes, u, defaultURL),
			Feed: feed, Tiles: tiles, Subscribers: subs, Holder: holder, Log: m.Log}
		hooks = append(hooks, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx)
		}()
	}
	return func(drain bool) {
		cancel()
		wg.Wait()
		if !drain {
			return
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
		defer dcancel()
		for _, w := range hooks {
			if err := w.Drain(dctx); err != nil {
				m.Log.Warn("webhook: the last pass before stopping left records for the next deliverer", "webhook", w.Name, "error", err.Error())
			}
		}
	}, nil
}

// drainTimeout bounds the webhooks' last pass when serve stops idle.
const drainTimeout = 30 * time.Second
