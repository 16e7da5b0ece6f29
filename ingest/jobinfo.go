package ingest

import (
	"encoding/json"
	"errors"
	"time"
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
	// LinearisedCurves and DroppedZM count the features whose curves were
	// approximated by line segments, and whose Z or M were dropped.
	LinearisedCurves int64      `json:"linearised_curves"`
	DroppedZM        int64      `json:"dropped_zm"`
	CommittedAt      *time.Time `json:"committed_at,omitempty"`
	// SourceCurrentJob is the job id of the source's current generation
	// ("" if none): the job itself when it is current.
	SourceCurrentJob string `json:"source_current_job_id,omitempty"`
	// CRS is the CRS each layer was read in (written jobs only).
	CRS []LayerCRS `json:"crs,omitempty"`
}

// ErrNoSuchJob is returned by ShowJob for a job id nobody has claimed.
var ErrNoSuchJob = errors.New("no such job")

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
