package postgis

import (
	"context"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// ClaimBatch takes the claim gate for every job of a batch in one
// statement (one round trip, whatever the batch's size), on behalf of owner
// for lease. results[i] is the outcome for jobs[i], with Claim's meaning:
// only ClaimWon lets the caller go on to download and write; a job already
// COMMITTED is ingest.ClaimCommitted (a duplicate, stopped before any download);
// any other claim that stopped it (a live lease, or one taken meanwhile)
// is ingest.ClaimHeld. A job that appears more than once in the batch is won at
// most once: its later occurrences are ingest.ClaimHeld (held by this batch).
// On error every result is ingest.ClaimHeld and the error is Transient.
func (s *Store) ClaimBatch(ctx context.Context, jobs []ingest.Job, owner string, lease time.Duration) ([]ingest.ClaimResult, error) {
	st, err := s.ClaimBatchAttempts(ctx, jobs, owner, lease)
	out := make([]ingest.ClaimResult, len(st))
	for i, c := range st {
		out[i] = c.Result
	}
	return out, err
}

// ClaimBatchAttempts is ClaimBatch with each won claim's attempt number
// (ingest.Reclaimer).
func (s *Store) ClaimBatchAttempts(ctx context.Context, jobs []ingest.Job, owner string, lease time.Duration) ([]ingest.ClaimStatus, error) {
	out := make([]ingest.ClaimStatus, len(jobs))
	for i := range out {
		out[i] = ingest.ClaimStatus{Result: ingest.ClaimHeld}
	}
	if len(jobs) == 0 {
		return out, nil
	}
	p := db.ClaimJobsParams{Owner: owner, LeaseSeconds: lease.Seconds()}
	for _, j := range jobs {
		p.JobIds = append(p.JobIds, j.ID)
		p.SourceBuckets = append(p.SourceBuckets, j.Source.Bucket)
		p.SourceKeys = append(p.SourceKeys, j.Source.Key)
	}
	rows, err := s.q.ClaimJobs(ctx, p)
	if err != nil {
		return out, ingest.Transientf("claim batch of %d: %w", len(jobs), err)
	}
	byID := make(map[string]ingest.ClaimStatus, len(rows))
	for _, r := range rows {
		switch {
		case r.Won:
			byID[r.JobID] = ingest.ClaimStatus{Result: ingest.ClaimWon, Attempt: r.Attempt}
		case r.State == "COMMITTED":
			byID[r.JobID] = ingest.ClaimStatus{Result: ingest.ClaimCommitted}
		default:
			byID[r.JobID] = ingest.ClaimStatus{Result: ingest.ClaimHeld}
		}
	}
	for i, j := range jobs {
		c, ok := byID[j.ID]
		if !ok {
			continue
		}
		out[i] = c
		if c.Result == ingest.ClaimWon {
			byID[j.ID] = ingest.ClaimStatus{Result: ingest.ClaimHeld} // a second occurrence: this batch holds it
		}
	}
	return out, nil
}
