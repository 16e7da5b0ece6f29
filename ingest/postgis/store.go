package postgis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twpayne/go-geom"
)

// Store is the ingest.Store of PostGIS: the claim gate, the write gate,
// and the reports, verification and inspection read from the same tables.
// All SQL it runs is compiled by sqlc from internal/db/query.
type Store struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	log     *slog.Logger
	metrics *ingest.Metrics

	sridMu    sync.Mutex
	sridKnown map[int]bool
	customCRS sync.Map // definition hash -> SRID of registered custom CRSs (crs.go)

	// OwnPartitionBytes is the input size (bytes) from which a job's
	// features get a partition of their own, indexed once after the COPY
	// and dropped whole when the generation is replaced; smaller jobs
	// share the target's shared partition. 0 means
	// DefaultOwnPartitionBytes. Set it before the first Write.
	OwnPartitionBytes int64

	// BeforeCommit, when set, is called inside the write-gate transaction
	// after the features and ledger are written and just before COMMIT.
	// It exists for fault-injection tests (a worker killed between COPY and
	// COMMIT); production code leaves it nil.
	BeforeCommit func(jobID string)
}

// Store implements ingest.Store.
var _ ingest.Store = (*Store)(nil)

// NewStore returns a Store on pool. metrics and log may be nil.
func NewStore(pool *pgxpool.Pool, metrics *ingest.Metrics, log *slog.Logger) *Store {
	if metrics == nil {
		metrics = ingest.NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Store{pool: pool, q: db.New(pool), log: log, metrics: metrics, sridKnown: map[int]bool{}}
}

// CurrentGeneration implements Store.
func (s *Store) CurrentGeneration(ctx context.Context, bucket, key, target, pipelineVersion string) (string, error) {
	cur, err := s.q.SourceCurrentJob(ctx, db.SourceCurrentJobParams{
		SourceBucket: bucket, SourceKey: key, TargetTable: target, PipelineVersion: pipelineVersion})
	if err != nil {
		return "", ingest.Transientf("read current generation: %w", err)
	}
	return cur, nil
}

// Claim takes the claim gate for job on behalf of owner for lease. Unless
// it returns ClaimWon, the caller must stop before downloading anything.
// A database error is Transient (and the status ingest.ClaimHeld with no lease).
func (s *Store) Claim(ctx context.Context, job ingest.Job, owner string, lease time.Duration) (ingest.ClaimStatus, error) {
	_, err := s.q.ClaimJob(ctx, db.ClaimJobParams{
		JobID: job.ID, Owner: owner, LeaseSeconds: lease.Seconds(),
		SourceBucket: job.Source.Bucket, SourceKey: job.Source.Key,
	})
	if err == nil {
		return ingest.ClaimStatus{Result: ingest.ClaimWon}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("claim %s: %w", job.ID, err)
	}
	c, err := s.q.ClaimHolder(ctx, job.ID)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) { // released and removed meanwhile: let the queue retry
			return ingest.ClaimStatus{Result: ingest.ClaimHeld}, nil
		}
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("claim %s: %w", job.ID, err)
	}
	if c.State == "COMMITTED" {
		return ingest.ClaimStatus{Result: ingest.ClaimCommitted}, nil
	}
	// CLAIMED under a live lease, or (in the moment between the two
	// statements) released, expired or FAILED: then LeaseLeft is 0.
	return ingest.ClaimStatus{Result: ingest.ClaimHeld, Owner: c.Owner, LeaseUntil: c.LeaseUntil.Time,
		LeaseLeft: time.Duration(c.LeaseLeftSeconds * float64(time.Second))}, nil
}

// Heartbeat extends owner's lease on job. It returns false when owner no
// longer holds the claim (the lease expired and another worker took it).
func (s *Store) Heartbeat(ctx context.Context, jobID, owner string, lease time.Duration) (bool, error) {
	n, err := s.q.HeartbeatClaim(ctx, db.HeartbeatClaimParams{JobID: jobID, Owner: owner, LeaseSeconds: lease.Seconds()})
	if err != nil {
		return false, ingest.Transientf("heartbeat %s: %w", jobID, err)
	}
	return n == 1, nil
}

// Fail records a permanent failure of job with reason. A committed job is
// never marked failed.
func (s *Store) Fail(ctx context.Context, jobID, reason string) error {
	return s.q.FailClaim(ctx, db.FailClaimParams{JobID: jobID, LastError: pgtype.Text{String: reason, Valid: true}})
}

// Release gives up owner's claim on job after a transient failure, so that
// the next delivery can claim it at once.
func (s *Store) Release(ctx context.Context, jobID, owner, reason string) error {
	return s.q.ReleaseClaim(ctx, db.ReleaseClaimParams{
		JobID: jobID, Owner: owner, LastError: pgtype.Text{String: reason, Valid: reason != ""}})
}

func (s *Store) checkSRID(ctx context.Context, srid int) (bool, error) {
	s.sridMu.Lock()
	known, ok := s.sridKnown[srid]
	s.sridMu.Unlock()
	if ok {
		return known, nil
	}
	known, err := s.q.SRIDKnown(ctx, int32(srid))
	if err != nil {
		return false, err
	}
	s.sridMu.Lock()
	s.sridKnown[srid] = known
	s.sridMu.Unlock()
	return known, nil
}

// Write is the write gate. In one transaction it inserts the job's ledger
// row with ON CONFLICT (job_id) DO NOTHING, takes the source's row lock,
// replaces the source's current generation (or records the job as
// superseded when a newer version is current), streams the features from r
// through COPY, records counts and area, marks the claim COMMITTED and
// commits. If the ledger insert touches no row the job was already written:
// the transaction is rolled back and AlreadyPresent returned, unless the
// ledger's content hash differs from contentHash, which is a Permanent
// payload-mismatch error. If owner no longer holds the claim at commit, the
// stolen lease is logged at ERROR and counted, and the write still commits:
// the ledger row keeps it exactly once.
//
// r must read in.Path, a local file: no network wait may happen inside the
// transaction. A parse error part-way rolls everything back. The size of
// in.Path (with its sidecars) decides whether the features get a partition
// of their own (see OwnPartitionBytes).
func (s *Store) Write(ctx context.Context, job ingest.Job, owner string, r geomio.Reader, in ingest.Fetched) (_ ingest.WriteResult, err error) {
	defer func() { err = classify(err) }() // a data exception is permanent (error.go)
	contentHash := in.ContentHash
	g, dup, err := s.openGate(ctx, job, contentHash, newJobRef(inputSize(in.Path) >= s.ownPartitionBytes()))
	if err != nil || g == nil {
		return dup, err
	}
	defer g.rollback(ctx)
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
	res := ingest.WriteResult{Outcome: ingest.Written}
	if ingest.CompareOrder(src.CurrentOrder, job.Source.Order) > 0 && p.Replaces == "" {
		// A newer version (a write or a delete) was applied already:
		// commit this one as superseded.
		res.Outcome = ingest.Superseded
		if err := g.q.FinishJob(ctx, db.FinishJobParams{JobID: job.ID, Status: "superseded", FeaturesChecksum: "0"}); err != nil {
			return ingest.WriteResult{}, err
		}
	} else {
		if err := s.copyFeatures(ctx, g, job, r, &res); err != nil {
			return ingest.WriteResult{}, err
		}
		// The previous generation goes last: dropping a partition locks
		// the target table until commit.
		if src.CurrentJobID.Valid {
			res.Replaced = src.CurrentJobID.String
			if err := s.retireCurrent(ctx, g.q, p.Target, res.Replaced, "replaced"); err != nil {
				return ingest.WriteResult{}, err
			}
		}
		if err := recordJobCRS(ctx, g.q, job.ID, r); err != nil { // the CRS of each layer read (crs.go)
			return ingest.WriteResult{}, fmt.Errorf("record job crs: %w", err)
		}
		if err := g.setCurrent(ctx, pgtype.Text{String: job.ID, Valid: true}); err != nil {
			return ingest.WriteResult{}, err
		}
	}
	return res, s.commitGate(ctx, g, job, owner)
}

// Retire is the write gate for a delete job (job.Delete). In one
// transaction gated by the delete's own ledger row, it retires the source's
// current generation (features removed, job status "retired") if the
// delete is newer than every version applied so far, records the delete as
// "deleted" and leaves the source with no current generation; an older
// delete is recorded as "superseded" and changes nothing. A duplicate
// delivery returns AlreadyPresent. Claim handling is as in Write.
func (s *Store) Retire(ctx context.Context, job ingest.Job, owner string) (_ ingest.WriteResult, err error) {
	defer func() { err = classify(err) }() // a data exception is permanent (error.go)
	g, dup, err := s.openGate(ctx, job, deleteContentHash, newJobRef(false))
	if err != nil || g == nil {
		return dup, err
	}
	defer g.rollback(ctx)
	res := ingest.WriteResult{Outcome: ingest.Retired}
	if ingest.CompareOrder(g.src.CurrentOrder, job.Source.Order) > 0 {
		res.Outcome = ingest.Superseded
		if err := g.q.FinishJob(ctx, db.FinishJobParams{JobID: job.ID, Status: "superseded", FeaturesChecksum: "0"}); err != nil {
			return ingest.WriteResult{}, err
		}
	} else {
		if g.src.CurrentJobID.Valid {
			res.Replaced = g.src.CurrentJobID.String
			if err := s.retireCurrent(ctx, g.q, job.Params.Target, res.Replaced, "retired"); err != nil {
				return ingest.WriteResult{}, err
			}
		}
		if err := g.q.FinishJob(ctx, db.FinishJobParams{JobID: job.ID, Status: "deleted", FeaturesChecksum: "0"}); err != nil {
			return ingest.WriteResult{}, err
		}
		if err := g.setCurrent(ctx, pgtype.Text{}); err != nil {
			return ingest.WriteResult{}, err
		}
	}
	return res, s.commitGate(ctx, g, job, owner)
}

// deleteContentHash is the content hash recorded for delete jobs, which
// have no content.
const deleteContentHash = "delete"

// gate is an open write-gate transaction whose ledger row is inserted and
// whose source row is locked.
type gate struct {
	tx     pgx.Tx
	q      *db.Queries
	src    db.Source
	srcKey db.EnsureSourceParams
	order  string
	ref    int64 // the job's job_ref
}

// openGate begins the write-gate transaction: the ledger insert ON
// CONFLICT (job_id) DO NOTHING first (with ref as the job's job_ref),
// then the source's row lock. When the job is in the ledger already it
// returns a nil gate and the rejection's result (AlreadyPresent), or a
// payload-mismatch error.
func (s *Store) openGate(ctx context.Context, job ingest.Job, contentHash string, ref int64) (*gate, ingest.WriteResult, error) {
	p := job.Params
	params, err := ingest.CanonicalJSON(job.ParamsMap())
	if err != nil {
		return nil, ingest.WriteResult{}, &ingest.Error{Kind: ingest.Permanent, Err: err}
	}
	tx, err := s.pool.Begin(ctx)
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
		res, err := s.alreadyPresent(ctx, job, contentHash)
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
	return g, ingest.WriteResult{}, nil
}

func (g *gate) rollback(ctx context.Context) {
	if g.tx != nil {
		_ = g.tx.Rollback(context.WithoutCancel(ctx)) // no-op after commit
	}
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

// retireCurrent removes a generation's features (its partition, or its
// rows of the shared one) and gives its job status.
func (s *Store) retireCurrent(ctx context.Context, q *db.Queries, target, jobID, status string) error {
	if err := q.DropJobFeatures(ctx, jobID); err != nil {
		return fmt.Errorf("remove features of %s: %w", jobID, err)
	}
	return q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: jobID, Status: status})
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
	if s.BeforeCommit != nil {
		s.BeforeCommit(job.ID)
	}
	if err := g.tx.Commit(ctx); err != nil {
		return ingest.Transientf("commit: %w", err)
	}
	return nil
}

// alreadyPresent handles a write-gate rejection: a duplicate, unless the
// payload differs.
func (s *Store) alreadyPresent(ctx context.Context, job ingest.Job, contentHash string) (ingest.WriteResult, error) {
	prev, err := s.q.GetJob(ctx, job.ID)
	if err != nil {
		return ingest.WriteResult{}, ingest.Transientf("read ledger: %w", err)
	}
	if prev.ContentHash != contentHash {
		s.metrics.PayloadMismatches.Inc()
		s.log.Error("payload mismatch: the ledger holds this job key with other content",
			"job", job.ID, "source", job.Source.String(), "ledger_hash", prev.ContentHash, "content_hash", contentHash)
		return ingest.WriteResult{}, ingest.Permanentf("payload mismatch: job %s is committed with content %s, this delivery has %s (key collision or non-deterministic source)",
			job.ID, prev.ContentHash, contentHash)
	}
	return ingest.WriteResult{Outcome: ingest.AlreadyPresent, Features: prev.FeatureCount, AreaM2: prev.TotalAreaM2}, nil
}

// copyFeatures streams r into the job's table (its own partition or the
// target's shared one) with one binary COPY, the geometry already
// MultiPolygon EWKB with its area and validity computed on the COPY's
// workers (see copyRows); features in a CRS other than EPSG:4326 go through
// the staging table to be transformed, measured and checked by PostGIS.
// Then the server repairs the invalid features (per the invalid policy)
// and sums the count, area and checksum in one pass, and a job with its
// own partition gets its GiST index and is attached. The counts are
// recorded on the job.
func (s *Store) copyFeatures(ctx context.Context, g *gate, job ingest.Job, r geomio.Reader, res *ingest.WriteResult) error {
	target := job.Params.Target
	table, err := g.q.CreateJobTable(ctx, db.CreateJobTableParams{TargetTable: target, JobRef: g.ref})
	if err != nil {
		return fmt.Errorf("job table: %w", err)
	}
	rows := &featureRows{ctx: ctx, r: r, p: job.Params, store: s, ref: g.ref}
	if _, err := copyRows(ctx, g.tx, table, false, g.ref > 0, rows); err != nil {
		return err
	}
	if rows.switched {
		// A feature in another CRS: it and the rest are staged and
		// transformed to 4326 by PostGIS.
		if err := g.q.CreateStaging(ctx); err != nil {
			return err
		}
		if _, err := copyRows(ctx, g.tx, "geoingest_staging", true, false, rows); err != nil {
			return err
		}
		if _, err := g.q.InsertStagedFeatures(ctx, db.InsertStagedFeaturesParams{TargetTable: target, JobRef: g.ref}); err != nil {
			return normaliseErr(err)
		}
	}
	fin, err := g.q.FinishJobTable(ctx, db.FinishJobTableParams{TargetTable: target, JobRef: g.ref, Repair: job.Params.Invalid == ingest.PolicyRepair,
		Invalid: rows.invalid, ServerCheck: rows.serverCheck || rows.switched})
	if err != nil {
		return normaliseErr(err)
	}
	written, area, repaired, collapsed := fin.Written, fin.AreaM2, fin.Repaired, fin.Collapsed
	if collapsed > 0 && job.Params.NullGeometry == ingest.PolicyFail {
		return ingest.Permanentf("%d features have no polygonal area left after repair", collapsed)
	}
	if written == 0 {
		// Nothing to write is a wrong upload (a points or lines layer, an
		// empty layer), not an empty generation: committing it would
		// replace the source's current parcels with nothing.
		return ingest.Permanentf("no polygonal features to write for %s: %d null or empty, %d not polygonal (points or lines), %d with no area left after repair",
			target, rows.skippedNull, rows.skippedType, collapsed)
	}
	res.Features, res.AreaM2 = written, area
	s.metrics.FeaturesWritten.Add(float64(written))
	return g.q.FinishJob(ctx, db.FinishJobParams{
		JobID: job.ID, Status: "current", FeatureCount: written, TotalAreaM2: area, FeaturesChecksum: fin.FeaturesChecksum,
		Encoding: r.Layer().Encoding, SkippedNull: rows.skippedNull + collapsed,
		SkippedType: rows.skippedType, RepairedInvalid: repaired,
	})
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

// inputSize is the size in bytes of the file at path and of the files
// beside it that share its name without extension (a shapefile's
// sidecars); 0 when it cannot be read.
func inputSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	n := st.Size()
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if ents, err := os.ReadDir(filepath.Dir(path)); err == nil && len(ents) < 1000 {
		for _, e := range ents {
			name := e.Name()
			if name == filepath.Base(path) || strings.TrimSuffix(name, filepath.Ext(name)) != stem {
				continue
			}
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				n += info.Size()
			}
		}
	}
	return n
}

// normaliseErr classifies an error from normalising the staged features.
// PostGIS reports every problem with a geometry as SQLSTATE XX000
// (internal_error): a ring PostGIS will not parse, or coordinates outside
// the source CRS's domain ("transform: Point outside of projection
// domain"). Those come from the upload's content and fail the same way on
// every retry, so they are permanent; without this they were classified
// transient and the message would be redelivered until it was
// dead-lettered, with no FAILED claim saying why. Other errors (connection
// lost, out of memory, serialization) keep their classification.
func normaliseErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "XX000" {
		return ingest.Permanentf("normalise features: PostGIS cannot use a geometry of this upload: %s", pgErr.Message)
	}
	return fmt.Errorf("normalise features: %w", err)
}

// lonLatSlack is how far outside [-180,180]x[-90,90] an EPSG:4326
// coordinate may lie (real files carry rounding noise such as
// 180.0000019); the same as geomio's.
const lonLatSlack = 1e-3

// featureRows reads a geomio.Reader for COPY (see copyRows), applying the
// null-geometry and wrong-type policies, promoting Polygon to MultiPolygon
// and checking that every geometry has a known CRS. It holds one feature
// at a time. While direct, it stops at the first feature not in EPSG:4326
// (switched), which it keeps for the staged COPY that follows.
type featureRows struct {
	ctx   context.Context
	r     geomio.Reader
	p     ingest.Params
	store *Store
	ref   int64 // job_ref
	row   copyRow
	err   error

	// switched: next(true) stopped at a feature in another CRS, which is
	// in row and is the first that next(false) yields.
	switched, pending bool

	skippedNull, skippedType int64

	// invalid: the indexes of the features the COPY's workers found
	// invalid (ST_IsValid false), in input order. serverCheck: some rows
	// went with no area, for the server to measure and check.
	invalid     []int64
	serverCheck bool
}

// next advances to the next feature to write, in f.row. direct means the
// feature table takes the rows as they are, so a geometry in another CRS
// ends the rows with f.switched set.
func (f *featureRows) next(direct bool) bool {
	if f.pending {
		f.pending = false
		return true
	}
	for f.r.Next() {
		ft := f.r.Feature()
		if ft.Geom == nil || ft.Geom.Empty() {
			if f.p.NullGeometry == ingest.PolicyFail {
				f.err = ingest.Permanentf("feature %d: null or empty geometry (null-geometry policy is fail)", ft.Index)
				return false
			}
			f.skippedNull++
			continue
		}
		var mp *geom.MultiPolygon
		switch t := ft.Geom.(type) {
		case *geom.MultiPolygon:
			mp = t
		case *geom.Polygon:
			mp = geom.NewMultiPolygon(geom.XY).SetSRID(t.SRID())
			if err := mp.Push(t); err != nil {
				f.err = ingest.Permanentf("feature %d: %w", ft.Index, err)
				return false
			}
		default:
			if f.p.WrongType == ingest.PolicyFail {
				f.err = ingest.Permanentf("feature %d: %T is not polygonal (wrong-type policy is fail)", ft.Index, ft.Geom)
				return false
			}
			f.skippedType++
			continue
		}
		srid := mp.SRID()
		if srid == 0 {
			f.err = ingest.Permanentf("layer %q: unknown CRS (no .prj or crs member that names one); give the source SRID (--source-srid) if you know it", ft.Layer)
			return false
		}
		known, err := f.store.checkSRID(f.ctx, srid)
		if err != nil {
			f.err = ingest.Transientf("check srid: %w", err)
			return false
		}
		if !known {
			f.err = ingest.Permanentf("layer %q: EPSG:%d is not a CRS that PostGIS knows (spatial_ref_sys)", ft.Layer, srid)
			return false
		}
		if srid == 4326 {
			// The layer says (or the caller said) longitude/latitude, but
			// projected coordinates are common under a wrong .prj or crs.
			// Nothing downstream would notice (no transform from 4326),
			// and the areas would be nonsense, so refuse, as geomio does
			// for GeoJSON without a crs member.
			if !inLonLatRange(mp.FlatCoords(), mp.Stride()) {
				b := mp.Bounds()
				f.err = ingest.Permanentf("layer %q feature %d: coordinates (%g %g)..(%g %g) outside longitude/latitude range, but the CRS is EPSG:4326: the .prj, the crs member or --source-srid is wrong",
					ft.Layer, ft.Index, b.Min(0), b.Min(1), b.Max(0), b.Max(1))
				return false
			}
		}
		props := ft.Properties
		if len(props) == 0 {
			props = []byte("{}")
		}
		f.row = copyRow{index: ft.Index, layer: ft.Layer, props: props, geom: mp}
		if direct && srid != 4326 {
			f.switched, f.pending = true, true
			return false
		}
		return true
	}
	if err := f.r.Err(); err != nil {
		f.err = err
	}
	return false
}

// Summary reports each feature table's current rows, jobs and area.
func (s *Store) Summary(ctx context.Context) ([]ingest.TableSummary, error) {
	rows, err := s.q.TableSummary(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ingest.TableSummary, 0, len(rows))
	for _, r := range rows {
		out = append(out, ingest.TableSummary{Target: r.TargetTable, Features: r.Features, Jobs: r.Jobs, AreaM2: r.AreaM2})
	}
	return out, nil
}

// inLonLatRange reports whether every coordinate in flat is a longitude
// and a latitude, within lonLatSlack of the ranges, as the bounds would
// say (a NaN is not outside them: the server's checks refuse it). It
// allocates nothing: the reader's goroutine asks it of every feature.
func inLonLatRange(flat []float64, stride int) bool {
	for i := 0; i+1 < len(flat); i += stride {
		x, y := flat[i], flat[i+1]
		if x < -180-lonLatSlack || x > 180+lonLatSlack || y < -90-lonLatSlack || y > 90+lonLatSlack {
			return false
		}
	}
	return true
}
