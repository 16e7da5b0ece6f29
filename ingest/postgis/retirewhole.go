package postgis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A generation retired whole (a source deleted, a generation replaced by
// a version written into a table of its own) is history (history.go).
// When it has a partition of its own, the write gate keeps that partition
// as its history instead of copying its rows (migration 0046:
// geoingest_retire_whole detaches and renames it, catalog changes only),
// at the gate's end, beside the attach and under the same ACCESS
// EXCLUSIVE lock on the target held to COMMIT (attach.go).
//
// The detach is not versioned as a DELETE is, so it is done only when no
// other backend holds a snapshot that could still read the generation
// (see the migration); otherwise, or when the lock is not had within
// retireWholeWait, the rows are copied and deleted as before
// (geoingest_drop_job_features), without the lock. Either way the history
// holds the same rows, exactly once with the job. What the check cannot
// see: a repeatable-read transaction that takes its snapshot between the
// check and the commit, then reads the target. The store's own
// repeatable-read readers (the area report, the admin check) lock the
// feature tables before their first snapshot (LockFeatureViews), so
// theirs is taken after the commit.

// retireWholeWait bounds the attempts to take the target's lock for a
// detach; past it the generation is copied instead, which needs no lock.
const retireWholeWait = 2 * time.Second

// retireLater marks jobID's generation to be retired at the gate's end
// (retireWhole). Only a gate whose commit runs retireWhole (writeGate's)
// may defer.
func (g *gate) retireLater(jobID string) {
	g.whole = append(g.whole, jobID)
}

// retireWhole retires the generations retireLater marked, each by a
// detach when it can, else by the copy. It must run after the gate's
// last statement but the attach.
func (s *Store) retireWhole(ctx context.Context, g *gate) (err error) {
	if len(g.whole) == 0 {
		return nil
	}
	prev, err := g.q.LockTimeout(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = g.q.SetLockTimeout(ctx, prev)
		}
	}()
	for _, jobID := range g.whole {
		why := "GEOINGEST_HISTORY_COPY=1"
		if !s.HistoryCopy {
			if why, err = s.detachWithin(ctx, g, jobID); err != nil {
				return fmt.Errorf("retire %s: %w", jobID, err)
			}
		}
		if why != "" {
			if err := g.q.DropJobFeatures(ctx, jobID); err != nil {
				return fmt.Errorf("remove features of %s: %w", jobID, err)
			}
			s.log.Info("generation retired whole: its rows copied into the history, its partition not kept", "job", jobID, "why", why)
		} else {
			s.log.Debug("generation retired whole: its partition kept as the history", "job", jobID)
		}
	}
	g.whole = nil
	return nil
}

// detachWithin tries geoingest_retire_whole in a savepoint, each attempt
// under a short lock_timeout (as the attach's), until it has the target's
// lock or retireWholeWait has passed, and returns "" when it detached, or
// why not. A refusal or no lock in time rolls the savepoint back,
// releasing the lock.
func (s *Store) detachWithin(ctx context.Context, g *gate, jobID string) (string, error) {
	start := time.Now()
	wait := attachAttemptMin
	for {
		sp, err := g.tx.Begin(ctx)
		if err != nil {
			return "", err
		}
		q := g.q.WithTx(sp)
		why, err := func() (string, error) {
			if err := q.SetLockTimeout(ctx, fmt.Sprintf("%dms", wait.Milliseconds())); err != nil {
				return "", err
			}
			return q.RetireWhole(ctx, jobID)
		}()
		if err == nil && why == "" {
			return "", sp.Commit(ctx)
		}
		if rerr := sp.Rollback(context.WithoutCancel(ctx)); rerr != nil {
			return "", rerr
		}
		if err == nil {
			return why, nil // no detach possible now: copied instead
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return "", err
		}
		if time.Since(start) >= retireWholeWait {
			return fmt.Sprintf("the target's lock not had in %s", retireWholeWait), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait + rand.N(2*wait)):
		}
		wait = min(2*wait, attachAttemptMax)
	}
}
