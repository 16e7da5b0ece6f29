package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Store implements ingest.Compactor.
var _ ingest.Compactor = (*Store)(nil)

// Compact folds own partitions into the shared ones (ingest.Compactor).
// Each fold is one transaction (geoingest_fold_job, migration 0011): the
// compactor's advisory lock (a second compactor is Busy), the source's
// row lock (SKIP LOCKED: a source a write gate holds is left for the next
// round), the rows copied into the shared partition and checked against
// the ledger, the ledger's job_ref changed, the own partition's rows
// deleted. A kill at any point before COMMIT leaves everything as it was;
// after it, the job is in the shared partition. Emptied partitions are
// dropped once no reader can still see their rows, each in a short
// transaction of its own under o.LockTimeout. Last, a shared partition's
// index that has grown well past a fresh build's size is rebuilt
// concurrently (rebuildSharedIndexes).
func (s *Store) Compact(ctx context.Context, o ingest.CompactOptions) (ingest.CompactResult, error) {
	start := time.Now()
	res := ingest.CompactResult{Own: map[string]int{}}
	keep := o.KeepOrDefault()
	lockTimeout := o.LockTimeout
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	counts, err := s.q.OwnPartitionCounts(ctx)
	if err != nil {
		return res, ingest.Transientf("compact: %w", err)
	}
	for _, c := range counts {
		res.Own[c.TargetTable] = int(c.Own)
	}
	var skip []string // jobs whose rows disagree with the ledger: left where they are
	for _, target := range []string{"parcels", "admin_units"} {
		if o.KeepSole && res.Own[target] == 1 {
			shared, err := s.q.SharedHoldsCurrent(ctx, target)
			if err != nil {
				return res, ingest.Transientf("compact: %w", err)
			}
			if !shared {
				continue
			}
		}
		for res.Own[target]-len(skip) > keep && (o.MaxJobs <= 0 || len(res.Folded) < o.MaxJobs) {
			f, busy, err := s.foldOldest(ctx, target, skip)
			var ie *ingest.Error
			if errors.As(err, &ie) && ie.Kind == ingest.Permanent && f != nil {
				s.log.Error("a generation was not folded: its rows disagree with the ledger (geoingest verify reports it)",
					"job", f.JobID, "error", err.Error())
				skip = append(skip, f.JobID)
				continue
			}
			if err != nil {
				res.Duration = time.Since(start)
				return res, err
			}
			if busy {
				res.Busy = len(res.Folded) == 0
				break
			}
			if f == nil { // every candidate's source is being written
				break
			}
			res.Folded = append(res.Folded, *f)
			res.Own[target]--
		}
		skip = skip[:0]
	}
	// Every round (not only one that folded): a compactor killed between
	// a fold's commit and this leaves the next round to do it.
	if _, err := s.q.NoteFolded(ctx); err != nil {
		return res, ingest.Transientf("compact: note folded partitions: %w", err)
	}
	for {
		dropped, err := s.dropFolded(ctx, lockTimeout)
		if err != nil {
			s.log.Warn("an emptied partition could not be dropped yet; the next compaction tries again", "error", err.Error())
			break
		}
		if dropped == "" {
			break
		}
		res.Dropped++
	}
	pending, err := s.q.PendingFolded(ctx)
	if err != nil {
		return res, ingest.Transientf("compact: %w", err)
	}
	res.Pending = int(pending)
	err = s.rebuildSharedIndexes(ctx, o, lockTimeout, &res)
	res.Duration = time.Since(start)
	return res, err
}

// foldOldest folds the oldest own partition of target whose source no
// one holds, in one transaction. It returns nil when there is none to
// fold now, and busy when another compactor runs. A job whose rows
// disagree with the ledger is returned with a Permanent error.
func (s *Store) foldOldest(ctx context.Context, target string, skip []string) (_ *ingest.FoldedJob, busy bool, err error) {
	start := time.Now()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, false, ingest.Transientf("compact: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := s.q.WithTx(tx)
	locked, err := q.CompactAdvisoryLock(ctx)
	if err != nil {
		return nil, false, ingest.Transientf("compact: %w", err)
	}
	if !locked {
		return nil, true, nil
	}
	job, err := q.LockOldestOwnPartition(ctx, db.LockOldestOwnPartitionParams{TargetTable: target, Skip: append([]string{}, skip...)})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ingest.Transientf("compact: lock source: %w", err)
	}
	f, err := q.FoldJob(ctx, job.JobID)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code[:2] == "22" {
			return &ingest.FoldedJob{JobID: job.JobID, Target: target}, false, ingest.Permanentf("compact: %s", pgErr.Message)
		}
		return nil, false, ingest.Transientf("compact: fold %s: %w", job.JobID, err)
	}
	ingest.HookAt(ctx, ingest.HookBeforeFoldCommit, ingest.HookWhere{Job: job.JobID})
	if err := tx.Commit(ctx); err != nil {
		return nil, false, ingest.Transientf("compact: commit: %w", err)
	}
	s.log.Info("folded a generation into the shared partition", "job", job.JobID, "target", target,
		"rows", f.Moved, "job_ref", f.NewRef, "seconds", time.Since(start).Seconds())
	return &ingest.FoldedJob{JobID: job.JobID, Target: target, Rows: f.Moved, Duration: time.Since(start)}, false, nil
}

// dropFolded drops one emptied partition whose old readers have all
// ended, in a transaction of its own that waits at most lockTimeout for
// its table's lock. It returns the partition's name, "" when none was
// ready.
func (s *Store) dropFolded(ctx context.Context, lockTimeout time.Duration) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := s.q.WithTx(tx)
	if err := q.SetLockTimeout(ctx, fmt.Sprintf("%dms", max(lockTimeout.Milliseconds(), 1))); err != nil {
		return "", err
	}
	name, err := q.DropFolded(ctx)
	if err != nil {
		return "", err
	}
	return name, tx.Commit(ctx)
}

// AnalyzeParent gathers the statistics of target's partitioned table as a
// whole (ANALYZE geoingest_store.parcels or admin_units, which also
// analyzes its partitions): autovacuum never analyzes a partitioned
// table, and without them the first plan of a query of the table on a
// new connection costs some 1.3 ms more (ingest.ParentAnalyzer).
func (s *Store) AnalyzeParent(ctx context.Context, target string) error {
	may, err := s.q.MayAnalyzeFeatureTables(ctx)
	if err != nil {
		return ingest.Transientf("analyze %s: %w", target, err)
	}
	if !may {
		return fmt.Errorf("analyze %s: %w", target, ingest.ErrAnalyzeDenied)
	}
	switch target {
	case "parcels":
		err = s.q.AnalyzeParcelsParent(ctx)
	case "admin_units":
		err = s.q.AnalyzeAdminUnitsParent(ctx)
	default:
		return ingest.Permanentf("analyze: %q is not a feature table", target)
	}
	if err != nil {
		return ingest.Transientf("analyze %s: %w", target, err)
	}
	return nil
}

// ParentRows is target's row count as its last analysis as a whole found
// it, -1 when it was never analyzed as a whole (ingest.ParentAnalyzer).
func (s *Store) ParentRows(ctx context.Context, target string) (int64, error) {
	if target != "parcels" && target != "admin_units" {
		return 0, ingest.Permanentf("analyze: %q is not a feature table", target)
	}
	n, err := s.q.ParentRows(ctx, target)
	if err != nil {
		return 0, ingest.Transientf("rows of %s: %w", target, err)
	}
	return n, nil
}
