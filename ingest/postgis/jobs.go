package postgis

import (
	"context"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
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
