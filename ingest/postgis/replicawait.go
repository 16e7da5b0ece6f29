package postgis

import (
	"context"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The durable acknowledgement (ingest/durability.go): after a write gate's
// transaction, the same session reads the server's WAL position and polls
// pg_stat_replication (its function, pg_stat_get_wal_senders) until enough
// standbys have flushed it. Polling, not waiting in the server: nothing in
// PostgreSQL lets a session wait for a standby but its own commit, which
// waits only for those synchronous_standby_names names at that moment.

// Store implements the durable acknowledgement.
var _ ingest.Durability = (*Store)(nil)

// Poll intervals of the wait: the first poll is at once (a synchronous
// standby has the commit already), the second replicaPollFirst later,
// then doubling up to replicaPollMax. A standby that is not waited for
// is usually a millisecond or two behind on a fast link: a first pause of
// 20 ms made such a small job's ack wait 16 ms on average
// (BenchmarkReplication, ha-local-commit-ack1), most of it the pause.
const (
	replicaPollFirst = 2 * time.Millisecond
	replicaPollMax   = 200 * time.Millisecond
)

// RequireReplicas turns the durable acknowledgement on (w.Replicas > 0)
// for the write gate calls that follow.
func (s *Store) RequireReplicas(w ingest.ReplicaWait) {
	if w.Timeout <= 0 {
		w.Timeout = ingest.DefaultReplicaTimeout
	}
	s.replicas = w
}

// AwaitReplicas waits, for a duplicate stopped at the claim gate, until
// jobID's commit is on the standbys: in one session, it reads whether the
// job is in the ledger with the WAL position, then waits for that.
func (s *Store) AwaitReplicas(ctx context.Context, jobID string) error {
	if s.replicas.Replicas <= 0 {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.notReplicated(ingest.WriteResult{}, "", -1, 0, err)
	}
	defer conn.Release()
	at, err := db.New(conn).LedgerJobAt(ctx, jobID)
	if err != nil {
		return s.notReplicated(ingest.WriteResult{}, "", -1, 0, err)
	}
	if !at.Committed {
		// The claim gate read another server's claim (a failover between
		// the two statements) or the claim outlived its ledger row: not a
		// duplicate here. The next delivery claims the job on this server.
		return ingest.Transientf("job %s is not in this server's ledger although its claim said committed (a failover between the two reads?): retried", jobID)
	}
	return s.waitFlushed(ctx, db.New(conn), ingest.WriteResult{}, at.Lsn)
}

// awaitOn is the wait after a write gate's transaction on conn: nil at
// once when the durable acknowledgement is off.
func (s *Store) awaitOn(ctx context.Context, conn *pgxpool.Conn, res ingest.WriteResult) error {
	if s.replicas.Replicas <= 0 {
		return nil
	}
	q := db.New(conn)
	lsn, err := q.WALPosition(ctx)
	if err != nil {
		return s.notReplicated(res, "", -1, 0, err)
	}
	return s.waitFlushed(ctx, q, res, lsn)
}

// waitFlushed polls, on q's session, until s.replicas.Replicas standbys
// have flushed lsn, or the timeout, or the session's end.
func (s *Store) waitFlushed(ctx context.Context, q *db.Queries, res ingest.WriteResult, lsn string) error {
	w := s.replicas
	start := time.Now()
	deadline := start.Add(w.Timeout)
	pause := replicaPollFirst
	for {
		n, err := q.StandbysFlushed(ctx, lsn)
		if err != nil {
			return s.notReplicated(res, lsn, -1, time.Since(start), err)
		}
		if int(n) >= w.Replicas {
			s.metrics.ReplicaWait.Observe(time.Since(start).Seconds())
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return s.notReplicated(res, lsn, int(n), time.Since(start), ingest.ErrReplicaTimeout)
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return s.notReplicated(res, lsn, int(n), time.Since(start), ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, replicaPollMax)
	}
}

func (s *Store) notReplicated(res ingest.WriteResult, lsn string, have int, waited time.Duration, err error) error {
	return &ingest.NotReplicatedError{Result: res, Want: s.replicas.Replicas, Have: have, LSN: lsn, Waited: waited, Err: err}
}

// ReplicationStatus tells whether the store's role may read the standbys'
// positions (a superuser or a member of pg_read_all_stats: without it
// none ever counts) and how many standbys stream from the server now.
func (s *Store) ReplicationStatus(ctx context.Context) (canRead bool, streaming int, err error) {
	r, err := s.q.ReplicationStatus(ctx)
	if err != nil {
		return false, 0, fmt.Errorf("replication status: %w", err)
	}
	return r.CanRead, int(r.Streaming), nil
}
