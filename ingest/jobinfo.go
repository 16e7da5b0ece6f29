package ingest

import (
	"errors"
	"time"
)

// ErrNoSuchJob is returned by ConsoleJob for a job id nobody has claimed.
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
