package ingest

import (
	"fmt"
	"sync"
	"time"
)

// receiveHealth follows whether the consumer's receives are failing: since
// when (the first failure after a success) and with what error. Readiness
// reads it (Consumer.ReceiveError); the receive loop writes it and uses it
// to pace its retries and its logs.
type receiveHealth struct {
	mu           sync.Mutex
	failingSince time.Time // zero while receives succeed
	failures     int       // in a row
	lastErr      error
	lastLog      time.Time
}

// receiveLogEvery is how often a receive that keeps failing is logged
// again, after the first failure's line.
const receiveLogEvery = 30 * time.Second

// receiveRetry is the wait between two failed receives: 1 s, doubled per
// failure in a row, at most 5 s.
var receiveRetry = Backoff{Base: time.Second, Max: 5 * time.Second}

// failed records a failed receive at now. It returns how long to wait
// before the next receive, how long receives have been failing, and
// whether to log this failure (the first one, then every
// receiveLogEvery).
func (h *receiveHealth) failed(err error, now time.Time) (wait, failingFor time.Duration, logIt bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failingSince.IsZero() {
		h.failingSince = now
	}
	h.failures++
	h.lastErr = err
	if h.failures == 1 || now.Sub(h.lastLog) >= receiveLogEvery {
		h.lastLog, logIt = now, true
	}
	return receiveRetry.Delay(h.failures), now.Sub(h.failingSince), logIt
}

// succeeded records a successful receive at now; it returns how long
// receives had been failing before it (0 when they were not).
func (h *receiveHealth) succeeded(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failingSince.IsZero() {
		return 0
	}
	d := now.Sub(h.failingSince)
	h.failingSince, h.failures, h.lastErr = time.Time{}, 0, nil
	return d
}

// ReceiveError returns an error saying for how long and why receives have
// been failing, when every receive has failed for longer than threshold;
// nil otherwise (a successful receive clears it at once). Readiness
// (/readyz) reports it: a service that cannot receive does no work.
func (c *Consumer) ReceiveError(threshold time.Duration) error {
	h := &c.receiveHealth
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failingSince.IsZero() {
		return nil
	}
	if d := time.Since(h.failingSince); d > threshold {
		return fmt.Errorf("receiving from the queue has failed for %s: %v", d.Round(time.Second), h.lastErr)
	}
	return nil
}
