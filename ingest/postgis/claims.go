package postgis

import (
	"context"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

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
