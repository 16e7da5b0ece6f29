package ingest

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// BatchCompaction runs the compactor beside a batch command's jobs as
// serve's consumer does beside its own (Consumer.compact): a round after
// each written job (Written) and at least every interval (folds and drops
// only), and rounds at the end (Finish, which also rebuilds the shared
// indexes that are due) until one is not Busy and no emptied partition waits,
// so that reads after a batch load are as fast as after serve's, without
// a separate `compact`. Several batch processes at once are safe: the
// compactor's lock lets one fold at a time, and each process's Finish
// waits its turn, so the last to finish leaves at most Options.Keep own
// partitions per table.
type BatchCompaction struct {
	compactor Compactor
	options   CompactOptions
	log       *slog.Logger
	kick      chan struct{}
	stop      context.CancelFunc
	done      chan struct{}
}

// StartBatchCompaction starts the background rounds (none when interval
// is not positive: then only Finish compacts).
func StartBatchCompaction(ctx context.Context, c Compactor, o CompactOptions, interval time.Duration, log *slog.Logger) *BatchCompaction {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(ctx)
	b := &BatchCompaction{compactor: c, options: o, log: log, kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	// The rounds beside the jobs fold and drop only: an index rebuilt while
	// the batch still writes grows again, and one cut by Finish's stop
	// leaves a leftover. Finish's rounds rebuild what is due.
	beside := o
	beside.ReindexFactor = -1
	go func() {
		defer close(b.done)
		runEvery(ctx, interval, b.kick, func(ctx context.Context) {
			r, err := c.Compact(ctx, beside)
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("compaction failed; the next round tries again", "error", err.Error())
			case err == nil && (len(r.Folded) > 0 || r.Dropped > 0 || len(r.Rebuilt) > 0):
				logCompaction(log, r)
			}
		})
	}()
	return b
}

// Written asks for a round soon: a job was written. It never blocks.
func (b *BatchCompaction) Written() {
	select {
	case b.kick <- struct{}{}:
	default: // a round is asked for already: it will see this job too
	}
}

// finishLockTimeout is the least wait of Finish's drops for their table's
// lock: longer than PostgreSQL's default deadlock_timeout, after which an
// autovacuum holding the lock is cancelled for them.
const finishLockTimeout = 3 * time.Second

// finishWait bounds how long Finish goes on after its last round that
// folded, dropped or rebuilt anything: waiting for another compactor, or
// for older readers to end so that emptied partitions can be dropped.
const finishWait = 2 * time.Minute

// Finish stops the background rounds and compacts until a round finds
// the compactor free and leaves no emptied partition waiting (or
// finishWait has passed with no round doing anything, or ctx ends). It returns the totals of its
// rounds; an error when a round failed.
func (b *BatchCompaction) Finish(ctx context.Context) (CompactResult, error) {
	b.stop()
	<-b.done
	start := time.Now()
	total := CompactResult{Own: map[string]int{}}
	o := b.options
	// An emptied partition is often being vacuumed by then (its rows were
	// deleted by the fold), and autovacuum gives way to a lock request
	// only after deadlock_timeout (1 s by default): a drop that gives up
	// at the same moment loses every time, round after round.
	o.LockTimeout = max(o.LockTimeout, finishLockTimeout)
	lastWork := start
	for {
		r, err := b.compactor.Compact(ctx, o)
		total.Folded = append(total.Folded, r.Folded...)
		total.Dropped += r.Dropped
		total.Rebuilt = append(total.Rebuilt, r.Rebuilt...)
		total.LeftoversDropped += r.LeftoversDropped
		total.ReindexDenied = r.ReindexDenied
		total.Own, total.Pending, total.Busy = r.Own, r.Pending, r.Busy
		total.Duration = time.Since(start)
		if err != nil {
			return total, err
		}
		if len(r.Folded) > 0 || r.Dropped > 0 || len(r.Rebuilt) > 0 || r.LeftoversDropped > 0 {
			lastWork = time.Now() // a long round is not a wait
		}
		if !r.Busy && r.Pending == 0 {
			logCompaction(b.log, total)
			return total, nil
		}
		if time.Since(lastWork) > finishWait {
			logCompaction(b.log, total)
			if r.Busy {
				return total, errors.New("another compactor held the lock throughout: its rounds (serve's, or the next command's) fold what is left")
			}
			return total, nil // emptied partitions wait for an older reader; the next round drops them
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
