package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/jackc/pgx/v5/pgxpool"
)

// splitWaves deals a month's jobs, shuffled, into at most n waves of
// sizes that differ by at most one (no empty wave): a real month's
// publications arrive spread over its weeks, not in one burst. Every job
// lands in exactly one wave; n <= 1 gives the jobs as they are, in one.
func splitWaves(jobs []ingest.Job, n int, rng *rand.Rand) [][]ingest.Job {
	if n <= 1 || len(jobs) <= 1 {
		return [][]ingest.Job{jobs}
	}
	n = min(n, len(jobs))
	all := append([]ingest.Job(nil), jobs...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := make([][]ingest.Job, n)
	for i, j := range all {
		out[i%n] = append(out[i%n], j)
	}
	return out
}

// restOfWeek is what passes after a wave of deliveries: the compactor's
// pass (when it runs at all), then up to -settle for autovacuum to reach
// every table over its threshold, then the compactor's next pass, which
// drops the partitions its last fold emptied once the transactions open at
// its commit have ended. It returns the seconds waited for autovacuum.
func restOfWeek(ctx context.Context, store *postgis.Store, pool *pgxpool.Pool, c config) (float64, error) {
	if c.compact > 0 {
		if _, err := store.Compact(ctx, ingest.CompactOptions{Keep: -1}); err != nil {
			return 0, fmt.Errorf("compact: %w", err)
		}
	}
	t := time.Now()
	if err := settle(ctx, pool, c.settle); err != nil {
		return 0, err
	}
	s := time.Since(t).Seconds()
	if c.compact > 0 {
		if _, err := store.Compact(ctx, ingest.CompactOptions{Keep: -1}); err != nil {
			return 0, fmt.Errorf("compact: %w", err)
		}
	}
	return s, nil
}
