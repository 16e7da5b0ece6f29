package postgis

import (
	"context"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// supersededContentHash is the content hash recorded for a job committed
// as superseded because its version could no longer be read (it has no
// content).
const supersededContentHash = "superseded"

// RecordSuperseded is the write gate for a job whose version can no longer
// be read because a newer version replaced it in the bucket (Fetch failed
// with ErrObjectChanged). In one transaction gated by the job's own ledger
// row it commits the job as "superseded" with no features, leaving the
// source's current generation alone, and marks the claim COMMITTED, so
// that every later delivery of the old event is a duplicate. A duplicate
// delivery returns AlreadyPresent. Claim handling is as in Write.
func (s *Store) RecordSuperseded(ctx context.Context, job ingest.Job, owner string) (_ ingest.WriteResult, err error) {
	defer func() { err = classify(err) }() // a data exception is permanent (error.go)
	g, dup, err := s.openGate(ctx, job, supersededContentHash, newJobRef(false))
	if err != nil || g == nil {
		return dup, err
	}
	defer g.rollback(ctx)
	if err := g.q.FinishJob(ctx, db.FinishJobParams{JobID: job.ID, Status: "superseded", FeaturesChecksum: "0"}); err != nil {
		return ingest.WriteResult{}, err
	}
	return ingest.WriteResult{Outcome: ingest.Superseded}, s.commitGate(ctx, g, job, owner)
}
