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
// target's ACCESS EXCLUSIVE lock with bounded waits (see above,
// underLockAttempts). It must be the gate's last statement.
func (s *Store) attachOwnPartition(ctx context.Context, g *gate, target string) error {
	tries, err := g.underLockAttempts(ctx, s.attachWait(), func(q *db.Queries) error {
		return q.AttachJobTable(ctx, db.AttachJobTableParams{TargetTable: target, JobRef: g.ref})
	})
	switch {
	case err == nil:
		if tries.attempts > 1 {
			s.log.Info("own partition attached after waiting for the readers of its target",
				"target", target, "attempts", tries.attempts, "seconds", time.Since(tries.start).Seconds())
		}
		return nil
	case errors.Is(err, errLockNotHad):
		return ingest.Transientf("attach own partition: %s was never free of other transactions for %s in %s (%d attempts): a long query or an open transaction holds it",
			target, tries.last, time.Since(tries.start).Round(time.Millisecond), tries.attempts)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	default:
		return fmt.Errorf("attach own partition: %w", err)
	}
}

// errLockNotHad: underLockAttempts' attempts found the lock taken until
// their time was up.
var errLockNotHad = errors.New("lock not had in time")

// lockTries is what underLockAttempts did: when it began, how many
// attempts, and the lock_timeout of the last.
type lockTries struct {
	start    time.Time
	attempts int
	last     time.Duration
}

// underLockAttempts runs fn (which takes a lock of the target: an attach,
// a detach) in a savepoint of the gate's transaction (attempt), each
// attempt under a lock_timeout from attachAttemptMin doubling to
// attachAttemptMax, with a pause of one to three times that between two
// (the readers queued behind the attempt pass), while fn fails for want
// of the lock (lock_not_available), until limit has passed: then
// errLockNotHad. Any other error of fn is returned as it is, its savepoint
// rolled back. The session's lock_timeout is put back once fn has
// succeeded: COMMIT takes locks too (a transaction that sent a pg_notify,
// changes.go, takes the cluster's notification queue lock there), and a
// commit cut by a lock timeout meant for an attempt would fail the job.
func (g *gate) underLockAttempts(ctx context.Context, limit time.Duration, fn func(q *db.Queries) error) (lockTries, error) {
	tries := lockTries{start: time.Now(), last: attachAttemptMin}
	prev, err := g.q.LockTimeout(ctx)
	if err != nil {
		return tries, err
	}
	for {
		tries.attempts++
		err := g.attempt(ctx, func(q *db.Queries) error {
			if err := q.SetLockTimeout(ctx, fmt.Sprintf("%dms", tries.last.Milliseconds())); err != nil {
				return err
			}
			return fn(q)
		})
		if err == nil {
			return tries, g.q.SetLockTimeout(ctx, prev)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return tries, err
		}
		if time.Since(tries.start) >= limit {
			return tries, errLockNotHad
		}
		select {
		case <-ctx.Done():
			return tries, ctx.Err()
		case <-time.After(tries.last + rand.N(2*tries.last)):
		}
		tries.last = min(2*tries.last, attachAttemptMax)
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
