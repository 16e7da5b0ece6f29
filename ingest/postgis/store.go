package postgis

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
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

// KnownSRID reports whether spatial_ref_sys has srid, caching the answer.
// It is the feature preparation's SRID check (prepare.KnownSRID).
func (s *Store) KnownSRID(ctx context.Context, srid int) (bool, error) {
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
