package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
)

// Store is the domain's whole seam to the database, one interface per
// role: Claims (the claim gate), WriteGate, CRSRegistry, Reports, Ledger,
// Pruner and PendingVersions. postgis.Store (package ingest/postgis) is
// the implementation; ingest/ingesttest holds each role's conformance
// suite, which every implementation passes.
//
// Nobody takes the whole of it but the wiring (cmd) and the conformance
// suites: each caller takes what it uses, split by caller. The pipeline
// (Service) takes a JobStore; backfill's replace-if-match a
// CurrentGenerations, Replay a Snapshots, the maintainer a
// ReportRefresher, a Compactor and a Pruner; a command only the role it
// uses. All of the methods are safe for concurrent use by many workers,
// in this process and in others sharing the database.
//
// Errors: unless a method says otherwise, an error the database (or the
// network to it) caused is Transient (KindOf), so that the delivery is
// retried; an error the input caused is Permanent.
type Store interface {
	Claims
	WriteGate
	CRSRegistry
	Reports
	Ledger
	Pruner
	PendingVersions
}

// JobStore is what the pipeline needs of the database to run one job:
// the claim gate, the write gate, and the CRS registration the readers
// call (geomio.Options.RegisterCRS). Service runs on one.
type JobStore interface {
	Claims
	WriteGate
	// RegisterCRS is CRSRegistry.RegisterCRS.
	RegisterCRS(c crs.CRS) (int, error)
}

// Snapshots is what Replay reads of the ledger (Ledger.Snapshot).
type Snapshots interface {
	// Snapshot reads what Replay compares for jobID. Returns a Permanent
	// error wrapping ErrJobNotFound when the job is not in the ledger.
	Snapshot(ctx context.Context, jobID string) (Snapshot, error)
}

// Compactor folds the features of generations written into partitions
// of their own into their table's shared partition, so that a spatial
// query visits a few partitions however many generations are current.
// Whatever it moves keeps every guarantee of the write gate: one
// transaction per job, under the job's source's row lock (a concurrent
// write of the same source waits for it, or it skips that source), the
// ledger's count, area and checksum unchanged (a job whose rows disagree
// with them is not moved), and every reader sees each current generation
// exactly once, before, during and after.
type Compactor interface {
	// Compact folds the oldest own partitions of each feature table until
	// at most o.Keep are left, then drops the emptied partitions no
	// reader can still see. Concurrent calls are safe: one of them works,
	// the others return Busy.
	Compact(ctx context.Context, o CompactOptions) (CompactResult, error)
}

// ParentAnalyzer is a Compactor that can gather the statistics of a
// feature table as a whole (its partitioned parent's, which autovacuum
// never gathers): a batch command's last compaction rounds do it for the
// tables they folded into, and serve's rounds under a policy
// (Maintainer.AnalyzeEvery), so that a query's first plan on a new
// connection does not pay for their absence.
type ParentAnalyzer interface {
	// AnalyzeParent analyzes the table as a whole; ErrAnalyzeDenied when
	// the role may not (PostgreSQL 15: only the owner may).
	AnalyzeParent(ctx context.Context, target string) error
	// ParentRows is the table's row count as its last analysis as a
	// whole found it, -1 when it was never analyzed as a whole.
	ParentRows(ctx context.Context, target string) (int64, error)
}

// ErrAnalyzeDenied is AnalyzeParent's error when the role may not
// analyze the feature tables: PostgreSQL 15 lets only their owner (the
// role migrations run as) do it, not geoingest_writer.
var ErrAnalyzeDenied = errors.New("this role may not ANALYZE the feature tables (PostgreSQL 15: only their owner may): run ANALYZE geoingest_store.parcels as the owner, from cron")

// Claims is the claim gate: one worker at a time on a job, under a lease,
// and a committed job never again.
type Claims interface {
	// Claim takes the claim gate for job on behalf of owner for lease.
	// It wins (ClaimWon) when no claim exists, or the existing one is
	// CLAIMED with an expired lease, or FAILED. A COMMITTED job answers
	// ClaimCommitted (the delivery is a duplicate); a claim CLAIMED under
	// another owner's live lease answers ClaimHeld with that owner, when
	// its lease ends and how long that is from now by the database's
	// clock. Unless it returns ClaimWon, the caller must stop before
	// downloading anything.
	Claim(ctx context.Context, job Job, owner string, lease time.Duration) (ClaimStatus, error)
	// ClaimBatch is Claim for many jobs in one round trip: results[i] is
	// the outcome for jobs[i], with Claim's meaning (a ClaimHeld result
	// carries no holder: ask Claim for it). A job twice in jobs is won at
	// most once: its later occurrences are ClaimHeld. On error every
	// result is ClaimHeld.
	ClaimBatch(ctx context.Context, jobs []Job, owner string, lease time.Duration) ([]ClaimResult, error)
	// Heartbeat extends owner's lease on jobID by lease from now. It
	// reports false, with a nil error, when owner no longer holds the
	// claim (another worker took it over).
	Heartbeat(ctx context.Context, jobID, owner string, lease time.Duration) (bool, error)
	// Release gives up owner's claim on jobID after a transient failure,
	// recording reason, so that the next delivery may claim it at once.
	// Releasing a claim owner does not hold does nothing.
	Release(ctx context.Context, jobID, owner, reason string) error
	// Fail records jobID's claim FAILED with reason and cause (a
	// permanent failure an operator can query, and be told what to do
	// about by its cause: CauseHint). A FAILED claim can be claimed
	// again; a COMMITTED one is never marked failed.
	Fail(ctx context.Context, jobID, reason string, cause Cause) error
}

// Reclaimer is the optional part of Claims that lets a worker take back
// its own dead attempt's claim at once (see ownattempt.go). A Store
// without it leaves such a claim to its lease.
type Reclaimer interface {
	// Reclaim takes back owner's claim on job if it is still CLAIMED by
	// owner under attempt (the ClaimStatus.Attempt of a claim owner won
	// and then ended itself without releasing it), whatever is left of
	// its lease, as a new attempt for lease: ClaimWon with the new
	// Attempt. Otherwise (the claim was committed, failed, released and
	// taken, or is another attempt's) it answers as Claim would. The
	// caller must know that the attempt numbered attempt has ended.
	Reclaim(ctx context.Context, job Job, owner string, attempt int32, lease time.Duration) (ClaimStatus, error)
	// ClaimBatchAttempts is Claims.ClaimBatch with each won result's
	// Attempt.
	ClaimBatchAttempts(ctx context.Context, jobs []Job, owner string, lease time.Duration) ([]ClaimStatus, error)
}

// WriteGate is the write gate: one transaction per job, gated by the
// job's ledger row, which is what makes a job's effect exactly once.
// Each entry point marks the claim COMMITTED; one whose owner lost the
// claim still commits (the ledger row keeps it exactly once).
type WriteGate interface {
	// Write is the write gate, one transaction: the job's ledger row is
	// inserted only if absent; if it was present the job is a duplicate
	// (Outcome AlreadyPresent, nothing changed), unless the ledger's
	// content hash differs from in.ContentHash, which is a Permanent
	// payload-mismatch error. Otherwise the features read from r (a
	// reader of the local file in.Path: nothing inside the transaction
	// waits on the network) are written, the job becomes its source's
	// current generation (Written, with the generation it replaced), or,
	// when a newer version of the source is current already, is recorded
	// superseded with no features (Superseded). The CRS of every layer r
	// read is recorded on the job. Any error (a parse error part-way
	// included) commits nothing.
	Write(ctx context.Context, job Job, owner string, r LayerReader, in Fetched) (WriteResult, error)
	// Retire is the write gate of a delete job (job.Delete): when the
	// removal is newer than every version of the source applied so far,
	// its current generation, if any, is retired (Retired, with the
	// retired job in Replaced) and the source is left with none; an
	// older removal is recorded Superseded and changes nothing; a
	// duplicate is AlreadyPresent.
	Retire(ctx context.Context, job Job, owner string) (WriteResult, error)
	// RecordSuperseded commits job as superseded, with no features and
	// without touching its source's current generation: for a version
	// that can never be read again (ErrObjectChanged). A duplicate is
	// AlreadyPresent.
	RecordSuperseded(ctx context.Context, job Job, owner string) (WriteResult, error)
}

// LayerReader is what the write gate reads: a geomio.Reader that also
// tells which layers it yielded features of (a zip holds several, each
// with its own CRS), so that the gate records the CRS of each. LogLayers
// makes one of any reader.
type LayerReader interface {
	geomio.Reader
	// Layers returns the layers read so far, in the order they came.
	Layers() []geomio.Layer
}

// CRSRegistry is what the database knows of coordinate reference systems.
type CRSRegistry interface {
	// RegisterCRS returns the SRID under which features in c are written:
	// c's EPSG code when the database knows it, else an SRID registered
	// for c's definition (the same definition always gets the same one).
	// It is geomio.Options.RegisterCRS.
	RegisterCRS(c crs.CRS) (int, error)
	// KnownSRID reports whether the database can transform geometries in
	// srid (it is prepare.KnownSRID).
	KnownSRID(ctx context.Context, srid int) (bool, error)
	// JobCRS returns the CRS each layer of a written job was read in.
	JobCRS(ctx context.Context, jobID string) ([]LayerCRS, error)
}

// Reports are the admin-unit area reports and their stored assignments.
type Reports interface {
	// RefreshReports stores the report assignments that are missing (the
	// reports are exact without them, only slower). It is idempotent.
	RefreshReports(ctx context.Context) (RefreshResult, error)
	// RefreshParcelJob is RefreshReports for one parcel job just written
	// (none when jobID is ""), dropping the assignments of the job it
	// replaced (replaced may be "").
	RefreshParcelJob(ctx context.Context, jobID, replaced string) (RefreshResult, error)
	// AreaReport runs the admin-unit area report q over the current
	// generations, with the admin layer's check, in one snapshot. An
	// invalid query is Permanent.
	AreaReport(ctx context.Context, q AreaQuery) (*Report, error)
	// CheckAdmin checks the admin layer of pipeline version version (""
	// means the newest) keyed by the property adminKey ("" means "name");
	// findings are in the result, not errors. An invalid key is
	// Permanent.
	CheckAdmin(ctx context.Context, adminKey, version string) (*AdminCheck, error)
}

// Ledger reads the jobs, sources and generations recorded.
type Ledger interface {
	// CurrentGeneration returns the job id of the current generation of
	// the source (bucket, key) in target under pipelineVersion, "" when
	// there is none.
	CurrentGeneration(ctx context.Context, bucket, key, target, pipelineVersion string) (string, error)
	// Snapshot reads what Replay compares for jobID. Returns a Permanent
	// error wrapping ErrJobNotFound when the job is not in the ledger.
	Snapshot(ctx context.Context, jobID string) (Snapshot, error)
	// LedgerJob rebuilds the job jobID as it would be delivered again;
	// only a local-file job can be (through files), and only while its
	// file holds the bytes it had. ErrJobNotFound (Permanent) when the
	// job is not in the ledger; Permanent when it cannot be rebuilt.
	LedgerJob(ctx context.Context, jobID string, files FileSource) (Job, error)
	// ConsoleReader is the one read model of jobs and sources: lists,
	// one job's record, claims in flight, the overview, and the
	// reconciliation of the ledger (Verify, VerifyScope). The console,
	// `geoingest jobs` and `geoingest verify` read through it.
	ConsoleReader
	// Summary reports each feature table's current rows, jobs and area.
	Summary(ctx context.Context) ([]TableSummary, error)
}

// ClaimResult is the outcome of the claim gate.
type ClaimResult int

const (
	// ClaimWon: the caller holds the claim and must go on to the write gate.
	ClaimWon ClaimResult = iota
	// ClaimHeld: another worker holds a live lease. The job is not done
	// and that worker may be dead: the delivery is not a duplicate, and
	// must be retried once the lease has ended.
	ClaimHeld
	// ClaimCommitted: the job is committed already: the delivery is a
	// duplicate.
	ClaimCommitted
)

// ClaimStatus is what the claim gate answered.
type ClaimStatus struct {
	Result ClaimResult
	// For ClaimHeld: the worker holding the claim, when its lease ends,
	// and how long that is from now by the database's clock (zero when
	// the claim was released or expired a moment ago: retry at once).
	Owner      string
	LeaseUntil time.Time
	LeaseLeft  time.Duration
	// Attempt is the claim's attempt number (the claims row's attempts
	// counter, which every won claim increments): for ClaimWon the
	// attempt the caller now runs, for ClaimHeld the holder's. With the
	// owner it names one attempt: no two won claims of a job share it.
	// 0 when unknown.
	Attempt int32
}

// WriteResult is what the write gate did.
type WriteResult struct {
	// Outcome is Written, Pending, AlreadyPresent, Superseded or Retired.
	Outcome Outcome
	// Features and AreaM2 are what a Written job wrote.
	Features int64
	AreaM2   float64
	// Replaced is the job whose generation this one replaced (or a delete
	// retired), if any.
	Replaced string
	// Changes is the job's change record, for a job that wrote or
	// retired a generation (nil otherwise, and for a duplicate).
	Changes *Changes
	// Reason is, for Pending, the guards the version tripped; for a
	// Written version that was forced past them, what they found.
	Reason string
	// Quarantined is the number of the file's features a policy left out
	// and the write gate put in the quarantine (ingest/quarantine.go).
	Quarantined int64
}

// TableSummary is what a feature table holds of current generations.
type TableSummary struct {
	Target   string
	Features int64
	Jobs     int64
	AreaM2   float64
}
