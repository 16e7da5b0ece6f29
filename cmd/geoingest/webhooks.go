package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
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

// webhookFlags are the batch commands' webhook flags (ingest, backfill):
// the same two serve takes, with the same environment variables.
type webhookFlags struct {
	url, secretFile string
}

func (m *Main) addWebhookFlags(fs *flag.FlagSet, w *webhookFlags) {
	fs.StringVar(&w.url, "webhook", m.Getenv("GEOINGEST_WEBHOOK"), "POST the change records (of the sources of routes without a webhook= option) to this URL as the jobs commit, and make a last pass before exiting, as serve does: a durable subscriber, so it sends every record after its cursor, whichever process wrote it (env GEOINGEST_WEBHOOK; docs/changes.md)")
	fs.StringVar(&w.secretFile, "webhook-secret-file", m.Getenv("GEOINGEST_WEBHOOK_SECRET_FILE"), "file holding the webhooks' HMAC key (env GEOINGEST_WEBHOOK_SECRET_FILE; else GEOINGEST_WEBHOOK_SECRET)")
}

// check refuses a --webhook (or GEOINGEST_WEBHOOK) that is not an http(s)
// URL as a usage error of cmd, before the database is opened.
func (w webhookFlags) check(m *Main, cmd string) error {
	if w.url == "" {
		return nil
	}
	if _, err := ingest.ParseWebhookURL(w.url); err != nil {
		fmt.Fprintf(m.Stderr, "geoingest %s: --%v\n", cmd, err)
		return errUsage
	}
	return nil
}

// startBatchWebhooks starts a batch command's webhooks (startWebhooks,
// with routes as the command has them); its stop, with drain, makes the
// last pass and tells stderr what it could not deliver (a batch command's
// log is off by default).
func startBatchWebhooks(ctx context.Context, m *Main, cmd string, store any, routes []ingest.Route, localRoot string, w webhookFlags) (stop func(drain bool), err error) {
	secret, err := webhookSecret(m, w.secretFile)
	if err != nil {
		return nil, err
	}
	stopHooks, err := startWebhooks(ctx, m, store, routes, localRoot, w.url, secret)
	if err != nil {
		return nil, err
	}
	return func(drain bool) {
		if err := stopHooks(drain); err != nil {
			fmt.Fprintf(m.Stderr, "geoingest %s: %v (they wait at the webhook's cursor for the next deliverer: serve, or geoingest changes --follow --webhook)\n", cmd, err)
		}
	}, nil
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
// that a batch run ends with what it committed delivered or tried; stop
// returns what the last passes left undelivered, one error per webhook.
// localRoot is the directory local files were routed under
// (ingest.WebhookSelect).
func startWebhooks(ctx context.Context, m *Main, store any, routes []ingest.Route, localRoot, defaultURL string, secret []byte) (stop func(drain bool) error, err error) {
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
		return func(bool) error { return nil }, nil
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
		w := &ingest.Webhook{URL: u, Secret: secret, Select: ingest.WebhookSelect(routes, u, defaultURL, localRoot),
			Feed: feed, Tiles: tiles, Subscribers: subs, Holder: holder, Log: m.Log}
		hooks = append(hooks, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx)
		}()
	}
	return func(drain bool) error {
		cancel()
		wg.Wait()
		if !drain {
			return nil
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
		defer dcancel()
		var errs []error
		for _, w := range hooks {
			if err := w.Drain(dctx); err != nil {
				m.Log.Warn("webhook: the last pass before stopping left records for the next deliverer", "webhook", w.Name, "error", err.Error())
				errs = append(errs, fmt.Errorf("%s: the last pass left records undelivered: %w", w.Name, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// drainTimeout bounds the webhooks' last pass when serve stops idle.
const drainTimeout = 30 * time.Second
