package ingest

import (
	"context"
	"time"
)

// renewEvery calls renew every interval on a goroutine of its own until
// the returned stop is called, ctx ends, or renew returns false. renew
// gets a context that ends when stop is called. stop waits for the
// goroutine to return. It is the one renewal ticker: a claim's lease
// (Service heartbeats) and a message's visibility (Consumer) are both
// kept alive by it.
func renewEvery(ctx context.Context, interval time.Duration, renew func(context.Context) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !renew(ctx) {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
