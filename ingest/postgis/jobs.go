package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// ListJobs lists jobs, most recently changed first.
func (s *Store) ListJobs(ctx context.Context, f ingest.JobFilter) ([]ingest.JobInfo, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	rows, err := s.q.ListJobs(ctx, db.ListJobsParams{State: f.State, Source: f.SourcePrefix, MaxRows: f.Limit})
	if err != nil {
		return nil, ingest.Transientf("list jobs: %w", err)
	}
	out := make([]ingest.JobInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, ingest.JobInfo{JobID: r.JobID, ClaimState: r.ClaimState, Status: r.Status,
			Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(), Target: r.TargetTable,
			PipelineVersion: r.PipelineVersion, Features: r.FeatureCount, AreaM2: r.TotalAreaM2,
			Attempts: r.Attempts, LastError: r.LastError, UpdatedAt: r.UpdatedAt.Time})
	}
	return out, nil
}

// ShowJob returns everything recorded about jobID, or ErrNoSuchJob. It
// reads the console's query of one job (ConsoleJob, query/console.sql):
// `geoingest jobs show` and the console's job page read a job the same
// way.
func (s *Store) ShowJob(ctx context.Context, jobID string) (ingest.JobDetail, error) {
	r, err := s.q.ConsoleJob(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.JobDetail{}, ingest.ErrNoSuchJob
	}
	if err != nil {
		return ingest.JobDetail{}, ingest.Transientf("show job: %w", err)
	}
	d := ingest.JobDetail{
		JobInfo: ingest.JobInfo{JobID: r.JobID, ClaimState: r.ClaimState, Status: r.Status,
			Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(), Target: r.TargetTable,
			PipelineVersion: r.PipelineVersion, Features: r.FeatureCount, AreaM2: r.TotalAreaM2,
			Attempts: r.Attempts, LastError: r.LastError, UpdatedAt: r.UpdatedAt.Time},
		Owner: r.Owner, LeaseUntil: r.LeaseUntil.Time, CreatedAt: r.CreatedAt.Time,
		VersionToken: r.VersionToken, OrderToken: r.OrderToken, ContentHash: r.ContentHash, Encoding: r.Encoding,
		SkippedNull: r.SkippedNull, SkippedType: r.SkippedType, RepairedInvalid: r.RepairedInvalid,
		LinearisedCurves: r.LinearisedCurves, DroppedZM: r.DroppedZm,
		CommittedAt: optTime(r.CommittedAt), SourceCurrentJob: r.SourceCurrentJobID,
	}
	if r.Status != "" {
		d.Params = json.RawMessage(r.Params)
		if d.CRS, err = s.JobCRS(ctx, jobID); err != nil {
			return ingest.JobDetail{}, err
		}
	}
	return d, nil
}

func optTime(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// ListSources lists sources whose key starts with prefix ("" for all),
// at most limit (default 100).
func (s *Store) ListSources(ctx context.Context, prefix string, limit int32) ([]ingest.SourceInfo, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.q.ListSources(ctx, db.ListSourcesParams{Source: prefix, MaxRows: limit})
	if err != nil {
		return nil, ingest.Transientf("list sources: %w", err)
	}
	out := make([]ingest.SourceInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, ingest.SourceInfo{Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(),
			Target: r.TargetTable, PipelineVersion: r.PipelineVersion, CurrentJob: r.CurrentJobID,
			Generations: r.Generations, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, UpdatedAt: r.UpdatedAt.Time})
	}
	return out, nil
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
