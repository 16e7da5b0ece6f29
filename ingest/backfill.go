package ingest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Backfill policies: what a re-run does with objects whose job is
// committed already. A backfill always names one.
const (
	// BackfillSkip: committed keys do nothing (a gap fill).
	BackfillSkip = "skip"
	// BackfillNewKey: a new pipeline version; every key is new and the
	// results land beside the old ones.
	BackfillNewKey = "new-key"
	// BackfillReplace: write a new generation for each source only while
	// its current generation is still the one seen when the object was
	// listed (replace if match); sources without one are written as usual.
	BackfillReplace = "replace"
)

// BackfillObject is one listed object: an event as if the object had just
// been created, and for a local file its path.
type BackfillObject struct {
	Event Event
	// Path is the local file ("" for an S3 object).
	Path string
}

// BackfillStats counts what a backfill did. Written+AlreadyPresent+
// Held+Superseded+Failed = Listed-Filtered once it is done.
type BackfillStats struct {
	Listed, Filtered, Written, AlreadyPresent, Held, Superseded, Failed int64
	// Pending counts versions a guard held (Outcome Pending): committed,
	// not current, waiting for an approval.
	Pending int64
	// Held counts jobs in progress elsewhere: their claim was held under
	// another worker's live lease, so they are not done; HeldUntil is the
	// last of those leases' ends.
	HeldUntil time.Time
	// Failures are the first failures' messages (at most 20).
	Failures []string
}

// Done is how many listed objects have been dealt with.
func (s BackfillStats) Done() int64 {
	return s.Filtered + s.Written + s.AlreadyPresent + s.Held + s.Superseded + s.Failed + s.Pending
}

// Backfill runs a job for each listed object through the same claim and
// write gates as live ingest, so it is safe alongside it: a committed job
// stops at the claim gate before anything is downloaded.
type Backfill struct {
	Service *Service
	Router  *Router
	// Policy is BackfillSkip, BackfillNewKey or BackfillReplace.
	Policy string
	// Params are the jobs' parameters; the target comes from the route.
	Params Params
	// Guards are the jobs' guards over their route's (--force --reason).
	Guards Guards
	// Objects resolves listed objects without a Path (nil for a local
	// backfill); Files those with one (nil for an S3 backfill).
	Objects ObjectSource
	Files   FileSource
	// Generations is what BackfillReplace reads of the ledger: each
	// source's current generation, when its job is made.
	Generations CurrentGenerations
	// Workers is how many jobs run at once (default 1).
	Workers int
	// Progress, when set, is called with the running totals after each
	// object (from one goroutine at a time).
	Progress func(BackfillStats)
	// Written, when set, is called with the result of each job written
	// (from one goroutine at a time).
	Written func(Result)
}

// Run lists with list and runs the jobs. It returns the totals, and an
// error only when listing failed or ctx ended (the totals then say how far
// it got); job failures are counted, not returned.
func (b *Backfill) Run(ctx context.Context, list func(context.Context, func(BackfillObject) error) error) (BackfillStats, error) {
	switch b.Policy {
	case BackfillSkip, BackfillNewKey, BackfillReplace:
	default:
		return BackfillStats{}, Permanentf("backfill policy %q: want skip, new-key or replace", b.Policy)
	}
	workers := max(b.Workers, 1)
	var (
		mu    sync.Mutex
		stats BackfillStats
		wg    sync.WaitGroup
	)
	tally := func(f func(*BackfillStats)) {
		mu.Lock()
		defer mu.Unlock()
		f(&stats)
		if b.Progress != nil {
			b.Progress(stats)
		}
	}
	pl := b.planner()
	if b.Policy == BackfillReplace && pl.Current == nil {
		return BackfillStats{}, Permanentf("backfill policy replace: no ledger to read the current generations from (Backfill.Generations)")
	}
	work := make(chan Planned)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				res := b.runOne(ctx, pl, it)
				tally(func(s *BackfillStats) {
					switch res.Outcome {
					case Written:
						s.Written++
						if b.Written != nil {
							b.Written(res)
						}
					case AlreadyPresent:
						s.AlreadyPresent++
					case Held:
						s.Held++
						if res.LeaseUntil.After(s.HeldUntil) {
							s.HeldUntil = res.LeaseUntil
						}
					case Superseded:
						s.Superseded++
					case Pending:
						s.Pending++
					default:
						s.Failed++
						if len(s.Failures) < 20 {
							s.Failures = append(s.Failures, fmt.Sprintf("%s: %v", res.Source, res.Err))
						}
					}
				})
			}
		}()
	}
	err := list(ctx, func(obj BackfillObject) error {
		tally(func(s *BackfillStats) { s.Listed++ })
		it := pl.Event(obj.Event, obj.Path)
		if !it.Passed() {
			b.Service.Metrics.EventsFiltered.WithLabelValues(it.Filtered).Inc()
			tally(func(s *BackfillStats) { s.Filtered++ })
			return nil
		}
		select {
		case work <- it:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(work)
	wg.Wait()
	sort.Strings(stats.Failures)
	return stats, err
}

// planner is the backfill's Planner: its routes and sources, its
// parameters and guards, and for BackfillReplace the ledger's current
// generations.
func (b *Backfill) planner() *Planner {
	pl := &Planner{Router: b.Router, Objects: b.Objects, Files: b.Files, Params: b.Params, Guards: b.Guards}
	if b.Policy == BackfillReplace {
		pl.Current = b.Generations
	}
	return pl
}

// runOne makes the job of one listed object that passed the trigger
// gate, and runs it.
func (b *Backfill) runOne(ctx context.Context, pl *Planner, it Planned) Result {
	pl.Resolve(ctx, &it, true)
	if it.Err != nil {
		src := it.Source
		if src == it.Event.String() { // no source yet: name the object
			src = Source{Bucket: it.Event.Bucket, Key: it.Event.Key, Store: it.Event.Store}.String()
		}
		return Result{Source: src, Outcome: Failed, Err: it.Err}
	}
	res := b.Service.Run(ctx, it.Job)
	if r, err := StillPending(ctx, b.Service.Store, res); err == nil {
		res = r // a version still pending counts as pending, as when it was held
	}
	return res
}
