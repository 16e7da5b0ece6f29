package ingest

import (
	"context"
	"log/slog"
	"sync"
)

// ownDeadAttempts is what a worker knows of its own attempts that ended
// without committing and without releasing their claim: a transient
// failure whose release could not reach the database, which is what a
// failover does to the attempt it cuts. Such a claim stays CLAIMED in the
// worker's name until its lease ends (minutes), and without this the
// worker's own next delivery of the job would find it "held" and wait
// for that lease: a stall of a whole lease per job a failover cuts.
//
// How a worker knows a claim is its own dead attempt: an attempt is named
// by the claim's owner and its attempt number (the claims row's attempts
// counter, which every won claim increments, returned to the winner), so
// no two won claims of a job share the pair. The worker records the pair
// here, in memory, only when the attempt has returned (its heartbeat
// stopped, its transaction ended as far as this process is concerned).
// When the job comes back and its claim is CLAIMED by this owner under a
// recorded number, no attempt of this worker still runs it, and no other
// worker has taken it since (that would have changed the owner and the
// number), so the claim is taken back (Reclaimer) as a new attempt at
// once.
//
// Why that is safe: a claim only keeps workers from duplicating work; the
// write gate keeps the data exactly once. If the dead attempt's
// transaction committed, the claim row is COMMITTED (it is committed in
// the same transaction) and Reclaim matches nothing; if it is still open
// on a server the worker can no longer reach, the new attempt's insert of
// the job's ledger row waits for it on the unique key and then writes, or
// reports already-present: exactly one of them writes. The memory is
// this process's, so a restarted worker (a new owner) waits for the lease
// like any other worker, as it must: it cannot know the old process's
// attempt has ended. It is kept per process, by owner and job, so that
// Services sharing an owner in one process (copies of one) share it.
//
// A claim statement whose answer was lost (the connection cut after the
// server ran it: the claim gate's own lost acknowledgement) may have
// taken the claim under a number the worker never heard. It is recorded
// as uncertain; the claim is then taken back only when no other attempt
// of this worker on the job is in progress (running counts them, from
// before their claim statement to their end), since every claim in the
// worker's name was made by one of its attempts.
type ownDeadAttempts struct {
	mu      sync.Mutex
	m       map[[2]string]int32 // (owner, job id) -> attempt number, or uncertainAttempt
	running map[[2]string]int   // (owner, job id) -> attempts in progress in this process
}

// uncertainAttempt records a claim statement of unknown outcome.
const uncertainAttempt int32 = -1

// begin counts an attempt of owner on jobID in progress; end uncounts it.
func (d *ownDeadAttempts) begin(owner, jobID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == nil {
		d.running = map[[2]string]int{}
	}
	d.running[[2]string{owner, jobID}]++
}

func (d *ownDeadAttempts) end(owner, jobID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{owner, jobID}
	if d.running[k]--; d.running[k] <= 0 {
		delete(d.running, k)
	}
}

// deadAttempts is this process's record of its own dead attempts.
var deadAttempts ownDeadAttempts

// note records that owner's attempt of jobID ended, unreleased.
func (d *ownDeadAttempts) note(owner, jobID string, attempt int32) {
	if attempt == 0 {
		return // unknown number: nothing can be proven; the lease decides
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[[2]string]int32{}
	}
	d.m[[2]string{owner, jobID}] = attempt
}

// forget drops what is known of owner's attempts of jobID (its claim was
// won or moved on).
func (d *ownDeadAttempts) forget(owner, jobID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, [2]string{owner, jobID})
}

// is reports whether the claim held by owner on jobID under attempt is a
// dead attempt of owner's: recorded as such, or a claim statement of
// unknown outcome with no other attempt of owner's on jobID in progress.
func (d *ownDeadAttempts) is(owner, jobID string, attempt int32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{owner, jobID}
	a, ok := d.m[k]
	if !ok || attempt == 0 {
		return false
	}
	// An uncertain claim: only when the caller is the worker's one
	// attempt on the job in progress.
	return a == attempt || a == uncertainAttempt && d.running[k] == 1
}

// endAttempt runs when an attempt that won the claim returns: an attempt
// whose release failed is noted as this worker's own dead attempt.
func (s *Service) endAttempt(log *slog.Logger, jobID string, attempt int32, res Result) {
	if res.unreleased {
		deadAttempts.note(s.Owner, jobID, attempt)
		log.Info("claim left CLAIMED by this ended attempt: this worker takes it back on the next delivery", "attempt", attempt)
	}
}

// reclaimOwn answers a claim found held by this worker's own owner: when
// the holder is one of its own dead attempts, the claim is taken back at
// once (Reclaimer) instead of waiting for the lease; otherwise (an
// attempt of this worker still runs the job: a duplicate delivery) it is
// held, as for any other holder.
func (s *Service) reclaimOwn(ctx context.Context, log *slog.Logger, job Job, held ClaimStatus) (ClaimStatus, error) {
	r, ok := s.Store.(Reclaimer)
	if !ok || !deadAttempts.is(s.Owner, job.ID, held.Attempt) {
		return held, nil
	}
	c, err := r.Reclaim(ctx, job, s.Owner, held.Attempt, s.Lease)
	if err != nil {
		return c, err
	}
	if c.Result == ClaimWon {
		s.Metrics.Claims.WithLabelValues("reclaimed").Inc()
		log.Info("took back the claim of this worker's own dead attempt", "dead_attempt", held.Attempt, "attempt", c.Attempt)
	}
	if c.Result != ClaimHeld || c.Owner != s.Owner {
		deadAttempts.forget(s.Owner, job.ID)
	}
	return c, nil
}
