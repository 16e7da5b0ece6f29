package ingest

import (
	"context"
	"fmt"
	"time"
)

// The durable acknowledgement (serve --ack-replicas): a message is acked
// only once its job's commit is on standbys, not only on the primary.
//
// Why: a primary acknowledges a commit once it has it; whether a standby
// has it too depends on the replication's settings *at that moment*. An
// asynchronous standby may not. A synchronous one may stop being waited
// for: pg_auto_failover's monitor puts the primary in wait_primary (and
// empties synchronous_standby_names) as soon as it finds no healthy
// standby, and a failover in that window promotes a standby that lacks
// the primary's last commits. A message acked after such a commit is
// never delivered again, and the job is lost.
//
// What: once a write gate's transaction has ended (COMMIT, or the
// rollback of a duplicate that found the ledger row), the same server
// session reads its WAL position and waits until ReplicaWait.Replicas
// standbys streaming from it have flushed that far. The session must be
// the one that committed: after a failover another connection may reach
// the new primary, whose positions say nothing of the old one's commit.
// A duplicate stopped at the claim gate waits the same way, reading the
// ledger row and the position in one statement of one session: the first
// delivery may have committed and then timed out here.
//
// When the wait fails (the timeout, or the session died: a failover) the
// job is committed but not acked: its delivery ends with a
// NotReplicatedError, Transient, and the message is given back with
// backoff. Its next delivery is a duplicate (at the claim gate) if the
// commit survived, and waits again; it writes the job again if the
// failover lost it. Nothing is recorded FAILED for it.

// ReplicaWait is what the durable acknowledgement waits for.
type ReplicaWait struct {
	// Replicas is how many standbys must have flushed a job's commit
	// before its message is acked; 0 turns the wait off.
	Replicas int
	// Timeout bounds the wait of one delivery (DefaultReplicaTimeout
	// when 0).
	Timeout time.Duration
}

// DefaultReplicaTimeout is ReplicaWait.Timeout's default: longer than a
// standby's restart or a loaded machine's replication lag, shorter than
// a worker should stay blocked on a standby that is gone.
const DefaultReplicaTimeout = 30 * time.Second

// Durability is the optional part of a JobStore that implements the
// durable acknowledgement (postgis.Store does).
type Durability interface {
	// RequireReplicas makes every later write gate call (Write, Retire,
	// RecordSuperseded) wait, once its transaction has ended and on the
	// session that ran it, until w.Replicas standbys have flushed the
	// server's WAL up to its position then. A call whose wait fails
	// returns a *NotReplicatedError (with the gate's result). Set it
	// before the first write; w.Replicas 0 turns it off.
	RequireReplicas(w ReplicaWait)
	// AwaitReplicas is that wait for a duplicate stopped at the claim
	// gate: in one session, it checks that jobID is in the ledger and
	// waits for the position it read with it. A job absent from the
	// ledger (a failover lost it: the claim gate read another server's)
	// is a Transient error; a failed wait a *NotReplicatedError. nil at
	// once when the wait is off.
	AwaitReplicas(ctx context.Context, jobID string) error
	// ReplicationStatus tells whether the store's database role may
	// read the standbys' positions (without that, none ever counts and
	// no job is acked) and how many standbys stream from the server now.
	ReplicationStatus(ctx context.Context) (canRead bool, streaming int, err error)
}

// NotReplicatedError is a write gate's (or AwaitReplicas's) error when
// the job's commit could not be seen on enough standbys: the job may be
// committed (Result says what the gate did), but its message must not be
// acked. It is Transient.
type NotReplicatedError struct {
	// Result is what the write gate did (zero for AwaitReplicas).
	Result WriteResult
	// Want is ReplicaWait.Replicas; Have the standbys that had flushed
	// the position when the wait ended (-1: unknown, the session died).
	Want, Have int
	// LSN is the position waited for ("" when the session died before
	// it was read); Waited how long the wait lasted.
	LSN    string
	Waited time.Duration
	// Err is why the wait ended: ErrReplicaTimeout or the session's
	// error.
	Err error
}

// ErrReplicaTimeout is NotReplicatedError.Err when the wait ran out of
// time.
var ErrReplicaTimeout = fmt.Errorf("timed out")

func (e *NotReplicatedError) Error() string {
	have := "?"
	if e.Have >= 0 {
		have = fmt.Sprint(e.Have)
	}
	return fmt.Sprintf("commit not yet on %d standby(s) after %s (%s had flushed WAL position %s): %v; the message is given back (--ack-replicas: is a standby down or far behind?)",
		e.Want, e.Waited.Round(time.Millisecond), have, orUnknown(e.LSN), e.Err)
}

func (e *NotReplicatedError) Unwrap() error { return e.Err }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
