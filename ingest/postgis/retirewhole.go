package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// A generation retired whole (a source deleted, a generation replaced by
// a version written into a table of its own, or by a pending version
// approved) is history (history.go).
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
// (retireWhole). Only a gate whose commit runs retireWhole (writeGate's,
// Decide's) may defer.
func (g *gate) retireLater(jobID string) {
	g.whole = append(g.whole, jobID)
}

// retireWhole retires the generations retireLater marked, each by a
// detach when it can, else by the copy. It must run after the gate's
// last statement but the attach.
func (s *Store) retireWhole(ctx context.Context, g *gate) error {
	for _, jobID := range g.whole {
		why := "GEOINGEST_HISTORY_COPY=1"
		if !s.HistoryCopy {
			var err error
			if why, err = s.detach(ctx, g, jobID); err != nil {
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

// errNotDetached: geoingest_retire_whole said why it would not detach.
var errNotDetached = errors.New("not detached")

// detach runs geoingest_retire_whole with the attach's bounded lock
// attempts (underLockAttempts) for at most retireWholeWait, and returns
// "" when it detached, or why not. A refusal or no lock in time rolls its
// savepoint back, releasing the lock.
func (s *Store) detach(ctx context.Context, g *gate, jobID string) (string, error) {
	var why string
	_, err := g.underLockAttempts(ctx, retireWholeWait, func(q *db.Queries) error {
		w, err := q.RetireWhole(ctx, jobID)
		if err == nil && w != "" {
			why = w
			return errNotDetached
		}
		return err
	})
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, errNotDetached):
		return why, nil // no detach possible now: copied instead
	case errors.Is(err, errLockNotHad):
		return fmt.Sprintf("the target's lock not had in %s", retireWholeWait), nil
	default:
		return "", err
	}
}
