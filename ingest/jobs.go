package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// JobInfo is one job as an operator sees it: its claim and, once
// committed, its ledger row.
type JobInfo struct {
	JobID           string    `json:"job_id"`
	ClaimState      string    `json:"claim_state"`      // CLAIMED, COMMITTED, FAILED
	Status          string    `json:"status,omitempty"` // ledger status, "" before commit
	Source          string    `json:"source"`
	Target          string    `json:"target_table,omitempty"`
	PipelineVersion string    `json:"pipeline_version,omitempty"`
	Features        int64     `json:"features"`
	AreaM2          float64   `json:"area_m2"`
	Attempts        int32     `json:"attempts"`
	LastError       string    `json:"last_error,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// JobFilter selects jobs for ListJobs. Empty fields match everything.
type JobFilter struct {
	// State is a claim state (CLAIMED, COMMITTED, FAILED) or a ledger
	// status (current, superseded, replaced, retired, deleted).
	State string
	// SourcePrefix matches the start of the source key.
	SourcePrefix string
	// Limit caps the rows (default 100).
	Limit int32
}

// ListJobs lists jobs, most recently changed first.
func (s *PostGISStore) ListJobs(ctx context.Context, f JobFilter) ([]JobInfo, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	rows, err := s.q.ListJobs(ctx, db.ListJobsParams{State: f.State, Source: f.SourcePrefix, MaxRows: f.Limit})
	if err != nil {
		return nil, Transientf("list jobs: %w", err)
	}
	out := make([]JobInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, JobInfo{JobID: r.JobID, ClaimState: r.ClaimState, Status: r.Status,
			Source: Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(), Target: r.TargetTable,
			PipelineVersion: r.PipelineVersion, Features: r.FeatureCount, AreaM2: r.TotalAreaM2,
			Attempts: r.Attempts, LastError: r.LastError, UpdatedAt: r.UpdatedAt.Time})
	}
	return out, nil
}

// JobDetail is everything recorded about one job.
type JobDetail struct {
	JobInfo
	Owner           string          `json:"owner"`
	LeaseUntil      time.Time       `json:"lease_until"`
	CreatedAt       time.Time       `json:"created_at"`
	VersionToken    string          `json:"version_token,omitempty"`
	OrderToken      string          `json:"order_token,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	ContentHash     string          `json:"content_hash,omitempty"`
	Encoding        string          `json:"encoding,omitempty"`
	SkippedNull     int64           `json:"skipped_null"`
	SkippedType     int64           `json:"skipped_type"`
	RepairedInvalid int64           `json:"repaired_invalid"`
	CommittedAt     *time.Time      `json:"committed_at,omitempty"`
	// SourceCurrentJob is the job id of the source's current generation
	// ("" if none): the job itself when it is current.
	SourceCurrentJob string `json:"source_current_job_id,omitempty"`
	// CRS is the CRS each layer was read in (written jobs only).
	CRS []LayerCRS `json:"crs,omitempty"`
}

// ErrNoSuchJob is returned by ShowJob for a job id nobody has claimed.
var ErrNoSuchJob = errors.New("no such job")

// ShowJob returns everything recorded about jobID, or ErrNoSuchJob.
func (s *PostGISStore) ShowJob(ctx context.Context, jobID string) (JobDetail, error) {
	r, err := s.q.ShowJob(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return JobDetail{}, ErrNoSuchJob
	}
	if err != nil {
		return JobDetail{}, Transientf("show job: %w", err)
	}
	d := JobDetail{
		JobInfo: JobInfo{JobID: r.JobID, ClaimState: r.ClaimState, Status: r.Status,
			Source: Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(), Target: r.TargetTable,
			PipelineVersion: r.PipelineVersion, Features: r.FeatureCount, AreaM2: r.TotalAreaM2,
			Attempts: r.Attempts, LastError: r.LastError, UpdatedAt: r.UpdatedAt.Time},
		Owner: r.Owner, LeaseUntil: r.LeaseUntil.Time, CreatedAt: r.CreatedAt.Time,
		VersionToken: r.VersionToken, OrderToken: r.OrderToken, ContentHash: r.ContentHash, Encoding: r.Encoding,
		SkippedNull: r.SkippedNull, SkippedType: r.SkippedType, RepairedInvalid: r.RepairedInvalid,
		CommittedAt: optTime(r.CommittedAt), SourceCurrentJob: r.SourceCurrentJobID,
	}
	if r.Status != "" {
		d.Params = json.RawMessage(r.Params)
		if d.CRS, err = s.JobCRS(ctx, jobID); err != nil {
			return JobDetail{}, err
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

// SourceInfo is one source and its current generation.
type SourceInfo struct {
	Source          string    `json:"source"`
	Target          string    `json:"target_table"`
	PipelineVersion string    `json:"pipeline_version"`
	CurrentJob      string    `json:"current_job_id"` // "" when none (never written, or deleted)
	Generations     int64     `json:"generations"`    // jobs the source has had: versions and deletes
	Features        int64     `json:"features"`
	AreaM2          float64   `json:"area_m2"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// ListSources lists sources whose key starts with prefix ("" for all),
// at most limit (default 100).
func (s *PostGISStore) ListSources(ctx context.Context, prefix string, limit int32) ([]SourceInfo, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.q.ListSources(ctx, db.ListSourcesParams{Source: prefix, MaxRows: limit})
	if err != nil {
		return nil, Transientf("list sources: %w", err)
	}
	out := make([]SourceInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, SourceInfo{Source: Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(),
			Target: r.TargetTable, PipelineVersion: r.PipelineVersion, CurrentJob: r.CurrentJobID,
			Generations: r.Generations, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, UpdatedAt: r.UpdatedAt.Time})
	}
	return out, nil
}
