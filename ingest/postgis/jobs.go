package postgis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

func optTime(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// CurrentGeneration is ingest.Ledger.CurrentGeneration.
func (s *Store) CurrentGeneration(ctx context.Context, bucket, key, target, pipelineVersion string) (string, error) {
	cur, err := s.q.SourceCurrentJob(ctx, db.SourceCurrentJobParams{
		SourceBucket: bucket, SourceKey: key, TargetTable: target, PipelineVersion: pipelineVersion})
	if err != nil {
		return "", ingest.Transientf("read current generation: %w", err)
	}
	return cur, nil
}

// JobVersusCurrent is a committed job's status and content hash beside
// its source's current generation's (Store.JobAgainstCurrent).
type JobVersusCurrent struct {
	Status      string
	ContentHash string
	// CurrentJob is the source's current job ("" when it has none), and
	// CurrentContentHash that job's content hash.
	CurrentJob         string
	CurrentContentHash string
}

// JobAgainstCurrent reads jobID's status and content hash and its
// source's current generation's, in one small query: what `ingest` needs
// to tell a file already present whose job is no longer current.
// ingest.ErrNoSuchJob when the job is not in the ledger.
func (s *Store) JobAgainstCurrent(ctx context.Context, jobID string) (JobVersusCurrent, error) {
	r, err := s.q.JobAgainstCurrent(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return JobVersusCurrent{}, fmt.Errorf("job %s: %w", jobID, ingest.ErrNoSuchJob)
	}
	if err != nil {
		return JobVersusCurrent{}, ingest.Transientf("read job %s and its source's current generation: %w", jobID, err)
	}
	return JobVersusCurrent{Status: r.Status, ContentHash: r.ContentHash, CurrentJob: r.CurrentJobID,
		CurrentContentHash: r.CurrentContentHash}, nil
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
