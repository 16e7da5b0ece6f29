package ingest

import (
	"context"
	"time"
)

// runEvery calls round every interval, and whenever kick delivers (a nil
// kick never does), until ctx ends. It returns at once when interval is
// not positive. It is the one ticker of the background work that runs
// beside the jobs: the report refresh, the compactor and the prune.
func runEvery(ctx context.Context, interval time.Duration, kick <-chan struct{}, round func(context.Context)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		round(ctx)
	}
}
