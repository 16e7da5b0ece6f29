package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// DefaultCompactKeep is CompactOptions.Keep's default: the own partitions
// a feature table keeps before the compactor folds the oldest. Every
// partition a spatial query visits costs planning, an index descent and a
// new connection's metadata, and with even 8 of them beside the shared
// one a spatial join costs tens of times one table's (docs/benchmarks.md):
// so none. A large job is still written into a partition of its own, at
// the speed of COPY, and folded after its commit.
const DefaultCompactKeep = 0

// CompactOptions says how far Compact goes.
type CompactOptions struct {
	// Keep is the number of own partitions each feature table keeps (the
	// newest ones); the older ones are folded into the shared partition.
	// Negative means DefaultCompactKeep; 0 folds them all.
	Keep int
	// MaxJobs, when positive, is the most jobs one call folds.
	MaxJobs int
	// LockTimeout bounds the wait for the lock that dropping an emptied
	// partition takes on its table (readers queue behind that wait); a
	// drop that times out is retried by the next call. 0 means one second.
	LockTimeout time.Duration
}

// KeepOrDefault is o.Keep, DefaultCompactKeep when negative.
func (o CompactOptions) KeepOrDefault() int {
	if o.Keep < 0 {
		return DefaultCompactKeep
	}
	return o.Keep
}

// FoldedJob is one job Compact folded into its table's shared partition.
type FoldedJob struct {
	JobID, Target string
	Rows          int64
	Duration      time.Duration
}

// CompactResult is what one Compact call did.
type CompactResult struct {
	// Folded are the jobs folded, oldest first.
	Folded []FoldedJob
	// Dropped is the number of emptied partitions dropped; Pending those
	// still waiting for older readers to end (the next call drops them).
	Dropped, Pending int
	// Own is, per feature table, the own partitions left.
	Own map[string]int
	// Busy is true when another compactor held the database's compaction
	// lock: this call did nothing.
	Busy bool
	// Duration is the whole call's.
	Duration time.Duration
}

func (r CompactResult) String() string {
	if r.Busy {
		return "another compactor is running: nothing done"
	}
	var rows int64
	for _, f := range r.Folded {
		rows += f.Rows
	}
	return fmt.Sprintf("%d jobs folded (%d rows), %d emptied partitions dropped, %d waiting for older readers; own partitions left: parcels %d, admin_units %d; in %.2f s",
		len(r.Folded), rows, r.Dropped, r.Pending, r.Own["parcels"], r.Own["admin_units"], r.Duration.Seconds())
}

// compact runs Compactor.Compact every CompactEvery, and after a job is
// committed (settle kicks it), until ctx ends. A failure is logged at
// WARN: the next round tries again, and nothing a reader sees depends on
// when a round runs.
func (c *Consumer) compact(ctx context.Context) {
	if c.Compactor == nil {
		return
	}
	log := c.Service.Log
	runEvery(ctx, c.CompactEvery, c.compactKick, func(ctx context.Context) {
		r, err := c.Compactor.Compact(ctx, c.CompactOptions)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("compaction failed; the next round tries again", "error", err.Error())
		case err == nil && (len(r.Folded) > 0 || r.Dropped > 0):
			logCompaction(log, r)
		}
	})
}

func logCompaction(log *slog.Logger, r CompactResult) {
	log.Info("compacted", "folded", len(r.Folded), "dropped", r.Dropped, "pending", r.Pending,
		"own_parcels", r.Own["parcels"], "own_admin_units", r.Own["admin_units"], "seconds", r.Duration.Seconds())
}
