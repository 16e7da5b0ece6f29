package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// stealer forces stolen leases: while a live serve (the victim) is in the
// middle of a large job, it expires the job's lease in the claims table,
// as a stalled heartbeat would let it expire, and delivers another copy of
// the job's notification, until a worker of another serve claims the job.
// The victim then finds at commit that it no longer owns the claim: a
// stolen lease, which it must log and count, while the write gate still
// keeps the job's features exactly once. The victim is kept from being
// killed until its job is committed.
type stealer struct {
	pool   *pgxpool.Pool
	fleet  *fleet
	del    *deliverer
	bucket string

	attempts int
	took     atomic.Int64 // attempts where a worker of another serve took the claim
	victims  []string     // job ids whose lease was taken
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
					if sl = s.fleet.slotOf(pid); sl != nil {
						s.fleet.protect(sl, true)
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
	defer s.fleet.protect(sl, false)
	// Let the victim download the object and open the write gate.
	time.Sleep(time.Second)
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
	s.took.Add(1)
	s.victims = append(s.victims, victim.jobID)
	// Keep the victim alive until its job is committed, so that it reaches
	// the commit and finds its lease stolen.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && s.fleet.alive(sl, pid); {
		if c, ok := s.claim(ctx, victim.jobID); ok && c.state == "COMMITTED" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	note("job %s: the claim of serve pid %d was taken by another serve after %d copies", victim.jobID[:12], pid, sent)
	return sent
}
