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
	attempt, err := s.q.ClaimJob(ctx, db.ClaimJobParams{
		JobID: job.ID, Owner: owner, LeaseSeconds: lease.Seconds(),
		SourceBucket: job.Source.Bucket, SourceKey: job.Source.Key,
	})
	if err == nil {
		return ingest.ClaimStatus{Result: ingest.ClaimWon, Attempt: attempt}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("claim %s: %w", job.ID, err)
	}
	return s.claimHolder(ctx, job.ID)
}

// Reclaim takes back owner's own dead attempt's claim (see
// ingest.Claims.Reclaim); when the claim is not that attempt's any more,
// it answers as a lost Claim does.
func (s *Store) Reclaim(ctx context.Context, job ingest.Job, owner string, attempt int32, lease time.Duration) (ingest.ClaimStatus, error) {
	n, err := s.q.ReclaimOwnAttempt(ctx, db.ReclaimOwnAttemptParams{
		JobID: job.ID, Owner: owner, Attempt: attempt, LeaseSeconds: lease.Seconds()})
	if err == nil {
		return ingest.ClaimStatus{Result: ingest.ClaimWon, Attempt: n}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("reclaim %s: %w", job.ID, err)
	}
	return s.Claim(ctx, job, owner, lease)
}

// claimHolder answers a lost claim: committed, or held (by whom, until
// when, under which attempt).
func (s *Store) claimHolder(ctx context.Context, jobID string) (ingest.ClaimStatus, error) {
	c, err := s.q.ClaimHolder(ctx, jobID)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) { // released and removed meanwhile: let the queue retry
			return ingest.ClaimStatus{Result: ingest.ClaimHeld}, nil
		}
		return ingest.ClaimStatus{Result: ingest.ClaimHeld}, ingest.Transientf("claim %s: %w", jobID, err)
	}
	if c.State == "COMMITTED" {
		return ingest.ClaimStatus{Result: ingest.ClaimCommitted}, nil
	}
	// CLAIMED under a live lease, or (in the moment between the two
	// statements) released, expired or FAILED: then LeaseLeft is 0.
	return ingest.ClaimStatus{Result: ingest.ClaimHeld, Owner: c.Owner, LeaseUntil: c.LeaseUntil.Time,
		LeaseLeft: time.Duration(c.LeaseLeftSeconds * float64(time.Second)), Attempt: c.Attempts}, nil
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

// Fail records a permanent failure of job with reason and cause. A
// committed job is never marked failed.
func (s *Store) Fail(ctx context.Context, jobID, reason string, cause ingest.Cause) error {
	return s.q.FailClaim(ctx, db.FailClaimParams{JobID: jobID, LastError: pgtype.Text{String: reason, Valid: true}, FailureCause: string(cause)})
}

// Release gives up owner's claim on job after a transient failure, so that
// the next delivery can claim it at once.
func (s *Store) Release(ctx context.Context, jobID, owner, reason string) error {
	return s.q.ReleaseClaim(ctx, db.ReleaseClaimParams{
		JobID: jobID, Owner: owner, LastError: pgtype.Text{String: reason, Valid: reason != ""}})
}

// Store takes back its workers' own dead attempts' claims.
var _ ingest.Reclaimer = (*Store)(nil)
