package postgis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/reportcells"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The write gate is one transaction per job, run by writeGate:
//
//  1. open: the job's ledger row is inserted with ON CONFLICT (job_id) DO
//     NOTHING (no row inserted: the job was written already, and the
//     delivery is a duplicate unless its content differs), then the
//     source's row is locked, so that the versions of one source are
//     applied one at a time;
//  2. the body: Write's, Retire's or RecordSuperseded's, which changes the
//     features, the job's status and the source's current generation, and
//     records the job's changes (changes.go: feature identity, the
//     changelog, the pg_notify wake-up);
//  3. commit: the claim is marked COMMITTED (a lease another worker took
//     over meanwhile is logged, counted and overridden: the ledger row
//     keeps the job exactly once), a large job's own partition is
//     attached under the target's ACCESS EXCLUSIVE lock (attach.go), then
//     COMMIT.
//
// Any error rolls everything back. The plpgsql the bodies call
// (query/features.sql: geoingest_create_job_storage,
// geoingest_finish_job_table, geoingest_attach_job_table,
// geoingest_drop_job_features, ...) is read as it is now in
// migrations/schema/functions.sql, generated from the migrations.
//
// Lock order on the target table: a gate takes no lock on it but ACCESS
// SHARE (a COPY into the shared partition reads the partition's bounds
// from it) until its last statement, the attach's ACCESS EXCLUSIVE. No
// gate drops a partition (a replaced one is emptied, and dropped by the
// compactor): so no gate waits on the target while holding a lock that
// another gate's attach waits for, and two gates cannot deadlock there.

// Content hashes recorded for the jobs that have no content.
const (
	deleteContentHash     = "delete"     // a delete job (Retire)
	supersededContentHash = "superseded" // a version that can no longer be read (RecordSuperseded)
)

// gateBody is the work of one write-gate transaction, between its open
// and its commit.
type gateBody func(ctx context.Context, g *gate) (ingest.WriteResult, error)

// writeGate runs body in the write gate of job (see the top of this
// file): contentHash is recorded in the ledger row and compared on a
// duplicate, ownPartition gives the job a partition of its own. The gate
// runs on a connection of its own, kept past the transaction's end: with
// the durable acknowledgement on (RequireReplicas), the same session then
// waits for the standbys (replicawait.go), and a failed wait returns the
// gate's result with a *ingest.NotReplicatedError.
func (s *Store) writeGate(ctx context.Context, job ingest.Job, owner, contentHash string, ownPartition bool, body gateBody) (ingest.WriteResult, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ingest.WriteResult{}, ingest.Transientf("begin: %w", err)
	}
	defer conn.Release() // a connection left in a failed transaction is closed, not reused
	res, err := s.gateOn(ctx, conn, job, owner, contentHash, ownPartition, body)
	if err != nil {
		return res, err
	}
	return res, s.awaitOn(ctx, conn, res)
}

// gateOn is the write gate's transaction on conn.
func (s *Store) gateOn(ctx context.Context, conn *pgxpool.Conn, job ingest.Job, owner, contentHash string, ownPartition bool, body gateBody) (_ ingest.WriteResult, err error) {
	defer func() { err = classify(err) }() // a data exception is permanent (error.go)
	g, dup, err := s.openGate(ctx, conn, job, contentHash, newJobRef(ownPartition))
	if err != nil || g == nil {
		return dup, err
	}
	g.actor = owner
	g.wholeAtCommit = true // commitGate runs retireWhole (retirewhole.go)
	defer g.rollback(ctx)
	res, err := body(ctx, g)
	if err != nil {
		return ingest.WriteResult{}, err
	}
	return res, s.commitGate(ctx, g, job, owner)
}

// Write is the write gate of a job with content: it replaces the
// source's current generation with the features read from r (or records
// the job as superseded when a newer version is current), records counts
// and area, and commits. A duplicate returns AlreadyPresent, unless the
// ledger's content hash differs from in.ContentHash, which is a Permanent
// payload-mismatch error.
//
// r must read in.Path, a local file: no network wait may happen inside the
// transaction. A parse error part-way rolls everything back. in.Size
// decides whether the features get a partition of their own (see
// OwnPartitionBytes).
func (s *Store) Write(ctx context.Context, job ingest.Job, owner string, r ingest.LayerReader, in ingest.Fetched) (ingest.WriteResult, error) {
	// The report cells are computed as the features stream (reportcells.go),
	// against the admin generation read before the gate opens.
	tally := s.reportTally(ctx, job)
	var cells *pendingCells
	res, err := s.writeGate(ctx, job, owner, in.ContentHash, in.Size >= s.ownPartitionBytes(), func(ctx context.Context, g *gate) (ingest.WriteResult, error) {
		g.tally = tally
		p := job.Params
		src := g.src
		if p.Replaces != "" && src.CurrentJobID.String != p.Replaces {
			cur := src.CurrentJobID.String
			if cur == "" {
				cur = "none"
			}
			return ingest.WriteResult{}, &ingest.Error{Kind: ingest.Precondition, Err: fmt.Errorf(
				"precondition failed: source %s current generation is %s, not %s", job.Source, cur, p.Replaces)}
		}
		if ingest.CompareOrder(src.CurrentOrder, job.Source.Order) > 0 && p.Replaces == "" {
			// A newer version (a write or a delete) was applied already:
			// commit this one as superseded.
			return g.finish(ctx, job.ID, ingest.Superseded, "superseded")
		}
		res := ingest.WriteResult{Outcome: ingest.Written}
		var err error
		if g.typed, err = s.typedColumns(ctx, g, job); err != nil {
			return ingest.WriteResult{}, err
		}
		keys := ingest.NewKeysReader(r) // for the drift guard (pending.go)
		g.keys = keys
		if src.CurrentJobID.Valid && !s.FullReplace {
			// The refresh takes this version's report cells from its
			// base's and its changes (report_refresh.go) when the base has
			// cells to the writer's admin generation: the writer need not
			// count every feature.
			if g.tally != nil {
				based, err := g.q.HasReportAssignment(ctx, db.HasReportAssignmentParams{
					ParcelJobID: src.CurrentJobID.String, AdminGeneration: g.tally.Generation().Name})
				if err != nil {
					return ingest.WriteResult{}, fmt.Errorf("report cells of %s: %w", src.CurrentJobID.String, err)
				}
				if based {
					g.tally = nil
				}
			}
			// Only what changed is written (diffwrite.go), unless the
			// guards hold the version (pending.go: g.held).
			if err := s.writeDiff(ctx, g, job, keys, in.Prefilter, &res); err != nil {
				return ingest.WriteResult{}, err
			}
		} else {
			if err := s.copyFeatures(ctx, g, job, keys, &res); err != nil {
				return ingest.WriteResult{}, err
			}
			if _, err := s.guard(ctx, g, job, keys.Keys(), &res, false); err != nil { // pending.go
				return ingest.WriteResult{}, err
			}
			if !g.held {
				// Identity and the change record, while the replaced rows are
				// still there (changes.go).
				var err error
				if res.Changes, err = g.matchGeneration(ctx, job); err != nil {
					return ingest.WriteResult{}, err
				}
				if src.CurrentJobID.Valid {
					res.Replaced = src.CurrentJobID.String
					if err := g.retireCurrent(ctx, res.Replaced, "replaced"); err != nil {
						return ingest.WriteResult{}, err
					}
				}
			}
		}
		if err := recordJobCRS(ctx, g.q, job.ID, g.pre.layersOf(r)); err != nil { // the CRS of each layer read (crs.go)
			return ingest.WriteResult{}, fmt.Errorf("record job crs: %w", err)
		}
		if g.held {
			return res, nil // pending (or superseded by a newer pending version): not current
		}
		cells = g.cells
		return res, g.setCurrent(ctx, pgtype.Text{String: job.ID, Valid: true})
	})
	if _, unconfirmed := errors.AsType[*ingest.NotReplicatedError](err); (err == nil || unconfirmed) && res.Outcome == ingest.Written {
		s.keepCells(job.ID, cells) // committed: the refresh may store them
	}
	return res, err
}

// Retire is the write gate of a delete job (job.Delete): it retires the
// source's current generation (features removed, job status "retired")
// if the delete is newer than every version applied so far, records the
// delete as "deleted" and leaves the source with no current generation;
// an older delete is recorded as "superseded" and changes nothing. A
// duplicate returns AlreadyPresent.
func (s *Store) Retire(ctx context.Context, job ingest.Job, owner string) (ingest.WriteResult, error) {
	return s.writeGate(ctx, job, owner, deleteContentHash, false, func(ctx context.Context, g *gate) (ingest.WriteResult, error) {
		if ingest.CompareOrder(g.src.CurrentOrder, job.Source.Order) > 0 {
			return g.finish(ctx, job.ID, ingest.Superseded, "superseded")
		}
		res := ingest.WriteResult{Outcome: ingest.Retired}
		var err error
		if res.Changes, err = g.recordRetire(ctx, job); err != nil { // changes.go
			return ingest.WriteResult{}, err
		}
		if g.src.CurrentJobID.Valid {
			res.Replaced = g.src.CurrentJobID.String
			if err := g.retireCurrent(ctx, res.Replaced, "retired"); err != nil {
				return ingest.WriteResult{}, err
			}
		}
		if _, err := g.finish(ctx, job.ID, ingest.Retired, "deleted"); err != nil {
			return ingest.WriteResult{}, err
		}
		return res, g.setCurrent(ctx, pgtype.Text{})
	})
}

// RecordSuperseded is the write gate of a job whose version can no longer
// be read because a newer version replaced it in the bucket (Fetch failed
// with ErrObjectChanged): it commits the job as "superseded" with no
// features, leaving the source's current generation alone, so that every
// later delivery of the old event is a duplicate. A duplicate returns
// AlreadyPresent.
func (s *Store) RecordSuperseded(ctx context.Context, job ingest.Job, owner string) (ingest.WriteResult, error) {
	return s.writeGate(ctx, job, owner, supersededContentHash, false, func(ctx context.Context, g *gate) (ingest.WriteResult, error) {
		return g.finish(ctx, job.ID, ingest.Superseded, "superseded")
	})
}

// gate is an open write-gate transaction whose ledger row is inserted and
// whose source row is locked.
type gate struct {
	tx     pgx.Tx
	q      *db.Queries
	src    db.Source
	srcKey db.EnsureSourceParams
	order  string
	ref    int64 // the job's job_ref
	held   bool  // the guards held the version: it is not to become current (pending.go)
	// emptied is a version of no features of a source that has a current
	// generation (recordWritten): the guards hold it, --force applies it,
	// and it is refused otherwise (pending.go).
	emptied bool
	extent  *[4]float64        // the version's extent as the prepare workers measured it, when it is its rows' (pending.go)
	rows    int64              // the version's rows, as the server counted them (recordWritten)
	keys    *ingest.KeysReader // the version's property keys, for the guards (pending.go)
	// version is a diff write's spool (diffspool.go): the version's rows,
	// which it sends whole only as needed, and their extent.
	version *versionSpool
	// pre is what a diff write's prefilter kept (prefilter.go); nil: the
	// version was read whole.
	pre    *prefiltered
	actor  string // who writes (the claim's owner) or decides (pending.go)
	attach string // the target its own table is to be attached to, last (attach.go)
	// whole is the generations retired whole, to be retired at the
	// gate's end (retirewhole.go), when wholeAtCommit: the gate's commit
	// is commitGate's, or an approval's (Decide, pending.go).
	whole         []string
	wholeAtCommit bool
	typed         *typedCols // the typed columns the job writes (typed.go); nil: none

	tally *reportcells.Tally // the job's report cells, computed as it streams; may be nil
	cells *pendingCells      // the tally's cells once the rows are final
}

// openGate begins the write-gate transaction on conn: the ledger insert ON
// CONFLICT (job_id) DO NOTHING first (with ref as the job's job_ref),
// then the source's row lock. When the job is in the ledger already it
// returns a nil gate and the rejection's result (AlreadyPresent), or a
// payload-mismatch error.
func (s *Store) openGate(ctx context.Context, conn *pgxpool.Conn, job ingest.Job, contentHash string, ref int64) (*gate, ingest.WriteResult, error) {
	p := job.Params
	params, err := ingest.CanonicalJSON(job.ParamsMap())
	if err != nil {
		return nil, ingest.WriteResult{}, &ingest.Error{Kind: ingest.Permanent, Err: err}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, ingest.WriteResult{}, ingest.Transientf("begin: %w", err)
	}
	q := s.q.WithTx(tx)
	n, err := q.InsertJob(ctx, db.InsertJobParams{
		JobID: job.ID, SourceBucket: job.Source.Bucket, SourceKey: job.Source.Key,
		VersionToken: job.Source.VersionToken, OrderToken: job.Source.Order, Params: params,
		Pipeline: ingest.Pipeline, PipelineVersion: p.PipelineVersion, TargetTable: p.Target,
		ContentHash: contentHash, SourceSrid: pgtype.Int4{Int32: int32(p.SourceSRID), Valid: p.SourceSRID != 0},
		JobRef: ref,
	})
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, ingest.WriteResult{}, fmt.Errorf("write gate: %w", err)
	}
	if n == 0 {
		_ = tx.Rollback(ctx)
		res, err := s.alreadyPresent(ctx, db.New(conn), job, contentHash) // the session's server's ledger row
		return nil, res, err
	}
	g := &gate{tx: tx, q: q, order: job.Source.Order, ref: ref, srcKey: db.EnsureSourceParams{
		SourceBucket: job.Source.Bucket, SourceKey: job.Source.Key,
		TargetTable: p.Target, PipelineVersion: p.PipelineVersion}}
	if err := q.EnsureSource(ctx, g.srcKey); err != nil {
		g.rollback(ctx)
		return nil, ingest.WriteResult{}, fmt.Errorf("source: %w", err)
	}
	if g.src, err = q.LockSource(ctx, db.LockSourceParams(g.srcKey)); err != nil {
		g.rollback(ctx)
		return nil, ingest.WriteResult{}, fmt.Errorf("lock source: %w", err)
	}
	if err := q.SetHistoryJob(ctx, job.ID); err != nil { // what the job retires is history (history.go)
		g.rollback(ctx)
		return nil, ingest.WriteResult{}, err
	}
	return g, ingest.WriteResult{}, nil
}

// alreadyPresent handles a write-gate rejection: a duplicate, unless the
// payload differs.
func (s *Store) alreadyPresent(ctx context.Context, q *db.Queries, job ingest.Job, contentHash string) (ingest.WriteResult, error) {
	prev, err := q.GetJob(ctx, job.ID)
	if err != nil {
		return ingest.WriteResult{}, ingest.Transientf("read ledger: %w", err)
	}
	if prev.ContentHash != contentHash {
		s.metrics.PayloadMismatches.Inc()
		s.log.Error("payload mismatch: the ledger holds this job key with other content",
			"job", job.ID, "source", job.Source.String(), "ledger_hash", prev.ContentHash, "content_hash", contentHash)
		return ingest.WriteResult{}, ingest.PermanentCause(ingest.CausePayloadMismatch, "payload mismatch: job %s is committed with content %s, this delivery has %s (key collision or non-deterministic source)",
			job.ID, prev.ContentHash, contentHash)
	}
	return ingest.WriteResult{Outcome: ingest.AlreadyPresent, Features: prev.FeatureCount, AreaM2: prev.TotalAreaM2}, nil
}

// commitGate marks the claim COMMITTED (detecting a stolen lease) and
// commits the write-gate transaction.
func (s *Store) commitGate(ctx context.Context, g *gate, job ingest.Job, owner string) error {
	owned, err := g.q.CommitClaimOwned(ctx, db.CommitClaimOwnedParams{JobID: job.ID, Owner: owner})
	if err != nil {
		return err
	}
	if owned == 0 {
		s.metrics.LeasesStolen.Inc()
		s.log.Error("stolen lease: another worker took over this job's claim; the write gate keeps it exactly once",
			"job", job.ID, "source", job.Source.String(), "owner", owner)
		if err := g.q.CommitClaimForce(ctx, db.CommitClaimForceParams{JobID: job.ID, Owner: owner,
			SourceBucket: job.Source.Bucket, SourceKey: job.Source.Key}); err != nil {
			return err
		}
	}
	ingest.HookAt(ctx, ingest.HookBeforeCommit, ingest.HookWhere{Owner: owner, Job: job.ID})
	if len(g.whole) > 0 {
		if err := s.retireWhole(ctx, g); err != nil {
			return err
		}
		ingest.HookAt(ctx, ingest.HookDuringRetire, ingest.HookWhere{Owner: owner, Job: job.ID})
	}
	if g.attach != "" {
		if err := s.attachOwnPartition(ctx, g, g.attach); err != nil {
			return err
		}
	}
	if err := g.tx.Commit(ctx); err != nil {
		return ingest.Transientf("commit: %w", err)
	}
	return nil
}

func (g *gate) rollback(ctx context.Context) {
	if g.tx != nil {
		_ = g.tx.Rollback(context.WithoutCancel(ctx)) // no-op after commit
	}
}

// finish records the job with status and no features, the result outcome.
func (g *gate) finish(ctx context.Context, jobID string, outcome ingest.Outcome, status string) (ingest.WriteResult, error) {
	if err := g.q.FinishJob(ctx, db.FinishJobParams{JobID: jobID, Status: status, FeaturesChecksum: "0"}); err != nil {
		return ingest.WriteResult{}, err
	}
	return ingest.WriteResult{Outcome: outcome}, nil
}

// setCurrent makes jobID (or no job, when invalid) the source's current
// generation and advances its order to this job's (never back: a repair
// by replace-if-match may carry an older token).
func (g *gate) setCurrent(ctx context.Context, jobID pgtype.Text) error {
	order := g.order
	if ingest.CompareOrder(g.src.CurrentOrder, order) > 0 {
		order = g.src.CurrentOrder
	}
	return g.q.SetSourceCurrent(ctx, db.SetSourceCurrentParams{
		CurrentJobID: jobID, CurrentOrder: order,
		SourceBucket: g.srcKey.SourceBucket, SourceKey: g.srcKey.SourceKey,
		TargetTable: g.srcKey.TargetTable, PipelineVersion: g.srcKey.PipelineVersion,
	})
}

// retireCurrent deletes a generation's features (the rows of its own
// partition, which the compactor drops later, or its rows of the shared
// one) and gives its job status.
func (g *gate) retireCurrent(ctx context.Context, jobID, status string) error {
	if g.wholeAtCommit {
		g.retireLater(jobID) // at the gate's end, kept whole when it can be (retirewhole.go)
	} else if err := g.q.DropJobFeatures(ctx, jobID); err != nil {
		return fmt.Errorf("remove features of %s: %w", jobID, err)
	}
	return g.q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: jobID, Status: status})
}

// DefaultOwnPartitionBytes is Store.OwnPartitionBytes's default: inputs
// of 8 MiB (some 20,000 parcels) or more get a partition of their own.
const DefaultOwnPartitionBytes = 8 << 20

func (s *Store) ownPartitionBytes() int64 {
	if s.OwnPartitionBytes > 0 {
		return s.OwnPartitionBytes
	}
	return DefaultOwnPartitionBytes
}

// newJobRef returns a random job_ref for a new ledger row: positive for a
// job with a partition of its own, negative for one in the shared
// partition. Its magnitude is in [2^32, 2^62): jobs migrated by 0005 have
// refs -1, -2, ..., and a collision between two random refs (one in 2^61)
// fails the ledger insert on jobs_job_ref_key, a transient error.
func newJobRef(own bool) int64 {
	ref := int64(1)<<32 + rand.Int64N(int64(1)<<62-int64(1)<<32)
	if !own {
		ref = -ref
	}
	return ref
}
