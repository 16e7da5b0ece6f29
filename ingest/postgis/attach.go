package postgis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgconn"
)

// A large job's own partition is attached to its target as the write
// gate's last statement, under ACCESS EXCLUSIVE on the target held to
// COMMIT (geoingest_attach_job_table, migration 0016). That lock is what
// makes the new generation appear to readers at once with its ledger row:
// ATTACH alone takes SHARE UPDATE EXCLUSIVE, which a reader's ACCESS SHARE
// does not wait for, and a reader that had planned its statement with the
// partitions it knew before the commit, and took its snapshot after it,
// saw the job current and none of its rows. With the lock, a reader either
// holds its lock before (then the attach waits for its transaction to end)
// or takes it after the commit, and then plans with the new partition.
//
// ACCESS EXCLUSIVE is the only mode that conflicts with a reader's ACCESS
// SHARE, and while the attach waits for the transactions holding the
// target (readers, a fold, a report refresh, a COPY into the shared
// partition), every new statement on the target waits behind it. So the
// wait is cut short: each attempt waits at most attachAttemptMax (from
// attachAttemptMin, doubling), and between attempts, for one to three
// times as long, the readers pass. A reader is held up by at most one
// attempt, and while a long transaction holds the target, for at most
// about half the time. A job whose attach has not had its moment after
// AttachWait fails with a transient error (rolled back: it is retried
// like any other), rather than hold its transaction indefinitely.

const (
	attachAttemptMin = 20 * time.Millisecond
	attachAttemptMax = 200 * time.Millisecond
)

// DefaultAttachWait is Store.AttachWait's default.
const DefaultAttachWait = 2 * time.Minute

func (s *Store) attachWait() time.Duration {
	if s.AttachWait > 0 {
		return s.AttachWait
	}
	return DefaultAttachWait
}

// attachOwnPartition attaches the gate's own table to target, taking the
// target's ACCESS EXCLUSIVE lock with bounded waits (see above). It
// must be the gate's last statement. The lock_timeout of its attempts is
// put back once it has attached: COMMIT takes locks too (a transaction
// that sent a pg_notify, changes.go, takes the cluster's notification
// queue lock there), and a commit cut by a lock timeout meant for the
// attach would fail the job.
func (s *Store) attachOwnPartition(ctx context.Context, g *gate, target string) (err error) {
	prev, err := g.q.LockTimeout(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = g.q.SetLockTimeout(ctx, prev)
		}
	}()
	return s.attachWithin(ctx, g, target)
}

// attachWithin is attachOwnPartition's attempts.
func (s *Store) attachWithin(ctx context.Context, g *gate, target string) error {
	start := time.Now()
	wait := attachAttemptMin
	for attempt := 1; ; attempt++ {
		err := g.attempt(ctx, func(q *db.Queries) error {
			if err := q.SetLockTimeout(ctx, fmt.Sprintf("%dms", wait.Milliseconds())); err != nil {
				return err
			}
			return q.AttachJobTable(ctx, db.AttachJobTableParams{TargetTable: target, JobRef: g.ref})
		})
		if err == nil {
			if attempt > 1 {
				s.log.Info("own partition attached after waiting for the readers of its target",
					"target", target, "attempts", attempt, "seconds", time.Since(start).Seconds())
			}
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return fmt.Errorf("attach own partition: %w", err)
		}
		if time.Since(start) >= s.attachWait() {
			return ingest.Transientf("attach own partition: %s was never free of other transactions for %s in %s (%d attempts): a long query or an open transaction holds it",
				target, wait, time.Since(start).Round(time.Millisecond), attempt)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait + rand.N(2*wait)): // the readers queued behind the attempt pass
		}
		wait = min(2*wait, attachAttemptMax)
	}
}

// attempt runs fn in a savepoint of the gate's transaction, rolled back
// when fn fails, so that the transaction goes on.
func (g *gate) attempt(ctx context.Context, fn func(q *db.Queries) error) error {
	sp, err := g.tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(g.q.WithTx(sp)); err != nil {
		_ = sp.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return sp.Commit(ctx)
}
