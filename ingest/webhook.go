package ingest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The webhook (docs/changes.md, "The webhook"): a consumer of the change
// feed that POSTs each change record of its sources to a URL, at least
// once. Its cursor is durable (Subscribers), and moves past a record only
// once the URL answered 2xx for it, so a crash or a restart anywhere
// delivers the record again, never skips it. The record is the job's
// effect, written once by its write gate, so a redelivered job (a
// duplicate stopped at a gate) adds no record and no POST; a record POSTed
// twice is the same body with the same Idempotency-Key (the job id).

// Subscribers keeps the change feed's durable consumers: a cursor per
// name, held by one process at a time under a lease (PostGIS store,
// migration 0031).
type Subscribers interface {
	// TakeSubscriber makes holder the subscriber's holder for lease (it
	// is created at the feed's start when new) and returns its cursor; ok
	// is false while another holder's lease runs.
	TakeSubscriber(ctx context.Context, name, holder string, lease time.Duration) (cursor string, ok bool, err error)
	// SaveSubscriberCursor moves the cursor forward to cursor (never
	// back), counts delivered records and renews the lease; false when
	// holder no longer holds it.
	SaveSubscriberCursor(ctx context.Context, name, holder, cursor string, delivered int, lease time.Duration) (bool, error)
	// ReleaseSubscriber ends holder's lease.
	ReleaseSubscriber(ctx context.Context, name, holder string) error
}

// WebhookPayload is the body POSTed for one change record: the record
// (counts, bbox, cursor: ingest.Changes) and, where the route asks, the
// tiles the job expired. It is built from the record alone, so every
// delivery of a record carries the same bytes.
type WebhookPayload struct {
	Event string `json:"event"` // "changes"
	Changes
	Tiles *ExpiredTiles `json:"expired_tiles,omitempty"`
}

// Webhook delivers the change feed's records to URL.
type Webhook struct {
	URL string
	// Secret, when set, signs each POST: X-Geoingest-Signature is
	// "t=UNIX,v1=HEX", HEX the HMAC-SHA256 of "UNIX.BODY" under Secret.
	Secret []byte
	// Name is the durable subscriber's name ("webhook " + URL when
	// empty): a new name starts at the feed's start.
	Name string
	// Select says whether a record goes to this URL, and with which
	// tiles (nil: none); nil selects every record, without tiles.
	Select func(Changes) (bool, *TileZoom)

	Feed        ChangeLog
	Tiles       TileExpiry // nil: no tiles
	Subscribers Subscribers
	Holder      string // this process (a lease holder's name)
	Client      *http.Client
	Log         *slog.Logger
	// Poll is how often an empty feed is read again (default 2 s); Wake,
	// when it receives, reads it at once (pg_notify's listener).
	Poll time.Duration
	Wake <-chan struct{}
	// Backoff is the first wait after a failed POST, doubled up to
	// MaxBackoff (defaults 1 s and 5 min); a record is retried until it
	// is delivered or ctx ends.
	Backoff, MaxBackoff time.Duration
	// Lease is the subscriber's lease (default 1 min), renewed while it
	// delivers.
	Lease time.Duration
}

func (w *Webhook) defaults() {
	if w.Name == "" {
		w.Name = "webhook " + redactURL(w.URL)
	}
	if w.Poll <= 0 {
		w.Poll = 2 * time.Second
	}
	if w.Backoff <= 0 {
		w.Backoff = time.Second
	}
	if w.MaxBackoff <= 0 {
		w.MaxBackoff = 5 * time.Minute
	}
	if w.Lease <= 0 {
		w.Lease = time.Minute
	}
	if w.Client == nil {
		w.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if w.Log == nil {
		w.Log = slog.Default()
	}
}

// redactURL is u without its user information and query (which may hold
// credentials), for names and logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// Run delivers until ctx ends (then it returns nil) or the store fails.
func (w *Webhook) Run(ctx context.Context) error {
	w.defaults()
	defer w.release(ctx)
	for ctx.Err() == nil {
		cursor, ok, err := w.Subscribers.TakeSubscriber(ctx, w.Name, w.Holder, w.Lease)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.Log.Warn("webhook: the subscriber's cursor", "webhook", w.Name, "error", err.Error())
			w.wait(ctx, w.Poll)
			continue
		}
		if !ok { // another process delivers for it: ask again at the next poll,
			// so that a dead holder's lease is taken over as soon as it ends
			w.wait(ctx, w.Poll)
			continue
		}
		n, err := w.deliverBatch(ctx, cursor, 0)
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("webhook", "webhook", w.Name, "error", err.Error())
		}
		if n == 0 || err != nil {
			w.wait(ctx, w.Poll)
		}
	}
	return nil
}

// Drain is a last pass over the feed, for a process that stops because
// it has nothing left to do (serve --until-idle): it delivers the records
// after the subscriber's cursor, each POSTed once more at most, and
// returns when the feed is read to its end, a POST is refused (that
// record and the rest stay for the next deliverer: the cursor is
// durable), another process holds the subscriber, or ctx ends. The end of
// the feed is where no record committed after the cursor is left: one
// the feed holds back because a transaction older than it is still
// running (anywhere on the server, as a batch run's own last record can
// be) is waited for, until ctx ends.
//
// The end is two reads: an empty read of the feed, no record held back,
// and a second empty read. A record the first read found held back can be
// released between it and the check (its older transaction ended then):
// the check no longer counts it, and only the second read finds it.
func (w *Webhook) Drain(ctx context.Context) error {
	w.defaults()
	defer w.release(ctx)
	settled := false // the last read was empty and nothing was held back after it
	for {
		cursor, ok, err := w.Subscribers.TakeSubscriber(ctx, w.Name, w.Holder, w.Lease)
		if err != nil || !ok {
			return err
		}
		n, err := w.deliverBatch(ctx, cursor, 1)
		if err != nil {
			return err
		}
		if n > 0 {
			settled = false
			continue
		}
		if settled {
			return nil
		}
		behind, err := w.Feed.ChangeFeedBehind(ctx, cursor)
		if err != nil {
			return err
		}
		if !behind {
			settled = true
			continue
		}
		w.wait(ctx, drainPoll)
		if ctx.Err() != nil {
			return fmt.Errorf("records committed after the cursor wait behind a transaction still running: %w", ctx.Err())
		}
	}
}

// drainPoll is how often Drain looks again for records the feed holds
// back.
const drainPoll = 100 * time.Millisecond

// release ends this process's lease of the subscriber, even once ctx has
// ended (within 5 s), so that another deliverer need not wait for it.
func (w *Webhook) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = w.Subscribers.ReleaseSubscriber(rctx, w.Name, w.Holder)
}

func (w *Webhook) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-w.Wake:
	}
}

// deliverBatch delivers the records after cursor, one at a time, moving
// the cursor past each once delivered (or not for this URL), each POST
// tried at most attempts times (0: until delivered or ctx ends). It
// returns how many records it read.
func (w *Webhook) deliverBatch(ctx context.Context, cursor string, attempts int) (int, error) {
	recs, err := w.Feed.ChangeFeed(ctx, cursor, 100)
	if err != nil {
		return 0, err
	}
	if len(recs) > 0 {
		HookAt(ctx, HookWebhookAfterRead, HookWhere{Owner: w.Holder, Job: recs[0].Job})
	}
	for _, c := range recs {
		deliver, zoom := true, (*TileZoom)(nil)
		if w.Select != nil {
			deliver, zoom = w.Select(c)
		}
		sent := 0
		if deliver {
			body, err := w.payload(ctx, c, zoom)
			if err != nil {
				return 0, err
			}
			if err := w.post(ctx, c, body, attempts); err != nil {
				return 0, err
			}
			HookAt(ctx, HookWebhookAfterPost, HookWhere{Owner: w.Holder, Job: c.Job})
			sent = 1
		}
		held, err := w.Subscribers.SaveSubscriberCursor(ctx, w.Name, w.Holder, c.Cursor, sent, w.Lease)
		if err != nil {
			return 0, err
		}
		if !held {
			return 0, fmt.Errorf("lost the lease of %s", w.Name)
		}
	}
	return len(recs), nil
}

func (w *Webhook) payload(ctx context.Context, c Changes, zoom *TileZoom) ([]byte, error) {
	p := WebhookPayload{Event: "changes", Changes: c}
	if zoom != nil && w.Tiles != nil {
		e, err := w.Tiles.ExpiredTiles(ctx, c.Job, *zoom)
		if err != nil {
			return nil, fmt.Errorf("expired tiles of %s: %w", c.Job, err)
		}
		p.Tiles = &e
	}
	return json.Marshal(p)
}

// post POSTs body until the URL answers 2xx, ctx ends or, when attempts
// is above 0, that many attempts were refused, renewing the lease
// between attempts.
func (w *Webhook) post(ctx context.Context, c Changes, body []byte, attempts int) error {
	backoff := Backoff{Base: w.Backoff, Max: w.MaxBackoff}
	for attempt := 1; ; attempt++ {
		status, err := w.postOnce(ctx, c.Job, attempt, body)
		if err == nil && status/100 == 2 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := ""
		if err != nil {
			reason = err.Error()
		} else {
			reason = "HTTP " + strconv.Itoa(status)
		}
		if attempts > 0 && attempt >= attempts {
			return fmt.Errorf("job %s not delivered after %d attempts (kept for the next deliverer): %s", c.Job, attempt, reason)
		}
		wait := backoff.Delay(attempt)
		w.Log.Warn("webhook: not delivered, retrying", "webhook", w.Name, "job", c.Job, "attempt", attempt, "retry_in", wait.String(), "error", reason)
		w.wait(ctx, wait)
		if held, err := w.Subscribers.SaveSubscriberCursor(ctx, w.Name, w.Holder, "", 0, w.Lease); err == nil && !held {
			return fmt.Errorf("lost the lease of %s", w.Name)
		}
	}
}

func (w *Webhook) postOnce(ctx context.Context, job string, attempt int, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "geoingest-webhook")
	req.Header.Set("Idempotency-Key", job)
	req.Header.Set("X-Geoingest-Event", "changes")
	req.Header.Set("X-Geoingest-Delivery-Attempt", strconv.Itoa(attempt))
	if len(w.Secret) > 0 {
		req.Header.Set("X-Geoingest-Signature", SignWebhook(w.Secret, time.Now(), body))
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// SignWebhook is the X-Geoingest-Signature of body sent at t: "t=UNIX,v1=HEX",
// HEX the HMAC-SHA256 of "UNIX.BODY" under secret.
func SignWebhook(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a signature header against body and secret, and
// that it was made within tolerance of now (0: any time). A receiver's
// check, also used by the tests.
func VerifyWebhook(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) bool {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return false
	}
	if tolerance > 0 && now.Sub(time.Unix(sec, 0)).Abs() > tolerance {
		return false
	}
	want, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hmac.Equal(want, m.Sum(nil))
}

// WebhookSelect is Webhook.Select for url over routes: a record goes to
// url when the route its source follows (the longest matching prefix, as
// the trigger gate routes) has url as its webhook, or has none and url is
// the default (serve --webhook); with that route's tiles. localRoot is the
// directory whose files the routes matched by their paths relative to it
// (serve --inbox, backfill --dir; "" for none): a local file's record is
// keyed by its absolute path, and under localRoot it is matched as the
// routes matched it.
func WebhookSelect(routes []Route, url, defaultURL, localRoot string) func(Changes) (bool, *TileZoom) {
	r := NewRouter(routes, nil)
	root := ""
	if localRoot != "" {
		root = strings.TrimSuffix(filepath.ToSlash(filepath.Clean(localRoot)), "/") + "/"
	}
	return func(c Changes) (bool, *TileZoom) {
		key := c.Key
		if c.Bucket == LocalBucket && root != "" {
			key = strings.TrimPrefix(key, root)
		}
		for _, rt := range r.Routes() {
			if (rt.Bucket == "" || rt.Bucket == c.Bucket) && strings.HasPrefix(key, rt.Prefix) && rt.Target == c.Target &&
				(len(rt.Suffixes) == 0 || hasSuffixFold(key, rt.Suffixes)) {
				to := rt.Options.Downstream.Webhook
				if to == "" {
					to = defaultURL
				}
				return to == url, rt.Options.Downstream.Tiles
			}
		}
		return url == defaultURL, nil
	}
}
