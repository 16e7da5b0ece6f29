package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// stealer forces stolen leases: while a live serve (the victim) is inside
// the write-gate transaction of a large job, it expires the job's lease in
// the claims table, as a stalled heartbeat would let it expire, and
// delivers another copy of the job's notification, until a worker of
// another serve claims the job. That worker blocks on the victim's ledger
// row; the victim finds at commit that it no longer owns the claim: a
// stolen lease, which it must log at ERROR and count, while the write gate
// keeps the job's features exactly once. The victim and the thief are
// kept from being killed until the job is committed.
type stealer struct {
	pool   *pgxpool.Pool
	fleet  *fleet
	del    *deliverer
	bucket string

	attempts int
	took     int          // attempts where a worker of another serve took the claim
	stolen   atomic.Int64 // ... and the victim logged the stolen lease
	notes    []string     // what each attempt did
}

// claimRow is a claim as the stealer sees it.
type claimRow struct {
	jobID, owner, state string
	attempts            int
}

func (s *stealer) claimOf(ctx context.Context, key string) (claimRow, bool) {
	var c claimRow
	err := s.pool.QueryRow(ctx, `SELECT job_id, owner, state, attempts FROM claims
		WHERE source_bucket = $1 AND source_key = $2 ORDER BY updated_at DESC LIMIT 1`, s.bucket, key).
		Scan(&c.jobID, &c.owner, &c.state, &c.attempts)
	return c, err == nil
}

func (s *stealer) claim(ctx context.Context, jobID string) (claimRow, bool) {
	c := claimRow{jobID: jobID}
	err := s.pool.QueryRow(ctx, `SELECT owner, state, attempts FROM claims WHERE job_id = $1`, jobID).
		Scan(&c.owner, &c.state, &c.attempts)
	return c, err == nil
}

// expire ends owner's lease on jobID now. It reports whether owner still
// held the claim.
func (s *stealer) expire(ctx context.Context, jobID, owner string) bool {
	tag, err := s.pool.Exec(ctx, `UPDATE claims SET lease_until = now() - interval '1 second'
		WHERE job_id = $1 AND owner = $2 AND state = 'CLAIMED'`, jobID, owner)
	return err == nil && tag.RowsAffected() == 1
}

// gateState says where a job is in the write gate.
type gateState int

const (
	gateNotYet    gateState = iota // no ledger row: the worker has not reached the write gate
	gateOpen                       // an uncommitted ledger row: a transaction is writing the job
	gateCommitted                  // the ledger row is committed
	gateUnknown                    // the probe failed
)

// gate probes whether a transaction is writing jobID now: it inserts the
// job's ledger row itself, ON CONFLICT DO NOTHING, in a transaction it
// always rolls back, with a short lock timeout. An uncommitted row of
// another transaction makes the insert wait (lock timeout: gateOpen); a
// committed one makes it insert nothing (gateCommitted); otherwise it
// inserts (gateNotYet), and the rollback leaves nothing behind. A write
// gate that reaches its own insert meanwhile waits the few milliseconds
// until the rollback, as for any concurrent duplicate.
func (s *stealer) gate(ctx context.Context, jobID string) gateState {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return gateUnknown
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // always rolled back
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`); err != nil {
		return gateUnknown
	}
	tag, err := tx.Exec(ctx, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params,
		pipeline, pipeline_version, target_table, status, content_hash)
		VALUES ($1, 'chaos-probe', 'chaos-probe', 'chaos-probe', '{}', 'chaos-probe', 'chaos-probe', 'parcels', 'superseded', 'chaos-probe')
		ON CONFLICT (job_id) DO NOTHING`, jobID)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "55P03":
		return gateOpen
	case err != nil:
		return gateUnknown
	case tag.RowsAffected() == 0:
		return gateCommitted
	}
	return gateNotYet
}

// ownerPID is the process id in an owner name (hostname:pid:random).
func ownerPID(owner string) int {
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// steal delivers n (a large object's notification) once and tries to have
// its job's lease stolen, as described on stealer. It returns how many
// copies of n it sent.
func (s *stealer) steal(ctx context.Context, n notification) int {
	s.attempts++
	note := func(format string, args ...any) {
		s.notes = append(s.notes, fmt.Sprintf("%s: ", n.key)+fmt.Sprintf(format, args...))
	}
	if s.del.send(ctx, n) != nil {
		note("could not send")
		return 0
	}
	sent := 1
	// The victim: a live serve that claimed the job.
	var victim claimRow
	var victimLog string
	var sl *slot
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, ok := s.claimOf(ctx, n.key); ok {
			if c.state == "COMMITTED" {
				note("committed before a worker could be caught in it")
				return sent
			}
			if c.state == "CLAIMED" {
				if pid = ownerPID(c.owner); pid != 0 {
					if sl, victimLog = s.fleet.protectPID(pid); sl != nil {
						victim = c
						break
					}
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			note("no live serve claimed it within 30 s")
			return sent
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer s.fleet.unprotect(sl)
	// Wait until the victim has downloaded the object and is writing it
	// inside the write-gate transaction.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := s.gate(ctx, victim.jobID)
		if st == gateOpen {
			break
		}
		if st == gateCommitted || !s.fleet.alive(sl, pid) || time.Now().After(deadline) {
			note("the victim (pid %d) committed, died or did not reach the write gate in time", pid)
			return sent
		}
	}
	took := false
	for copyNo := 0; copyNo < 6 && !took; copyNo++ {
		if !s.expire(ctx, victim.jobID, victim.owner) {
			break
		}
		if s.del.send(ctx, n) != nil {
			break
		}
		sent++
		before := victim.attempts
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			c, ok := s.claim(ctx, victim.jobID)
			if !ok {
				continue
			}
			if c.state != "CLAIMED" {
				break
			}
			if c.attempts > before {
				if c.owner != victim.owner {
					took = true
					// Keep the thief alive too: were it killed, its
					// lease would run out and the victim's serve could
					// claim the job back before the victim commits.
					if thief, _ := s.fleet.protectPID(ownerPID(c.owner)); thief != nil {
						defer s.fleet.unprotect(thief)
					}
				}
				victim.attempts = c.attempts // the victim's own serve took it back: another copy
				break
			}
			s.expire(ctx, victim.jobID, victim.owner) // its heartbeat renewed the lease
		}
	}
	if !took {
		note("the victim (pid %d) committed or failed before another serve took the claim", pid)
		return sent
	}
	s.took++
	// Keep the victim alive until its job is committed, so that it reaches
	// the commit and finds its lease stolen.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && s.fleet.alive(sl, pid); {
		if c, ok := s.claim(ctx, victim.jobID); ok && c.state == "COMMITTED" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The victim logs the stolen lease just after its commit: look for the
	// line for up to 5 s (a fixed 200 ms could miss it on a loaded machine,
	// and the steal then counted as failed, leaving fewer targets).
	stolen := false
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if stolen = logged(victimLog, "stolen lease", victim.jobID); stolen || time.Now().After(deadline) {
			break
		}
	}
	if stolen {
		s.stolen.Add(1)
		note("job %s: serve pid %d was writing it when another serve took its claim (after %d copies); it logged the stolen lease at commit",
			victim.jobID[:12], pid, sent)
	} else {
		note("job %s: another serve took the claim of serve pid %d (after %d copies), but pid %d logged no stolen lease (died, or the thief committed first)",
			victim.jobID[:12], pid, sent, pid)
	}
	return sent
}
