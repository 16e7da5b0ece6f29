package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// Snapshot reads what Replay compares. Returns a Permanent error wrapping
// ErrJobNotFound when the job is not in the ledger, a Transient one when
// the database fails.
func (s *Store) Snapshot(ctx context.Context, jobID string) (ingest.Snapshot, error) {
	row, err := s.q.JobSnapshot(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.Snapshot{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("job %s: %w", jobID, ingest.ErrJobNotFound)}
	}
	if err != nil {
		return ingest.Snapshot{}, ingest.Transientf("snapshot %s: %w", jobID, err)
	}
	snap := ingest.Snapshot{
		JobID: row.JobID, Status: row.Status, CommittedAt: row.CommittedAt.Time,
		FeatureCount: row.FeatureCount, TotalAreaM2: row.TotalAreaM2, ContentHash: row.ContentHash,
		FeaturesChecksum: row.FeaturesChecksum,
		ClaimState:       row.ClaimState, Target: row.TargetTable, SourceCurrent: row.SourceCurrentJobID,
	}
	if snap.Features, err = s.featureSum(ctx, row.TargetTable, jobID); err != nil {
		return ingest.Snapshot{}, err
	}
	snap.SourceFeatures = snap.Features
	if snap.SourceCurrent != "" && snap.SourceCurrent != jobID {
		if snap.SourceFeatures, err = s.featureSum(ctx, row.TargetTable, snap.SourceCurrent); err != nil {
			return ingest.Snapshot{}, err
		}
	}
	return snap, nil
}

func (s *Store) featureSum(ctx context.Context, target, jobID string) (ingest.FeatureSum, error) {
	if target != "parcels" && target != "admin_units" {
		return ingest.FeatureSum{}, ingest.Permanentf("job %s: unknown target table %q", jobID, target)
	}
	r, err := s.q.JobFeaturesChecksum(ctx, db.JobFeaturesChecksumParams{TargetTable: target, JobID: jobID})
	if err != nil {
		return ingest.FeatureSum{}, ingest.Transientf("checksum %s: %w", jobID, err)
	}
	return ingest.FeatureSum{JobID: jobID, N: r.N, AreaM2: r.AreaM2, Checksum: r.Checksum}, nil
}

// LedgerJob rebuilds a committed job from its ledger row so that it can be
// delivered again: its source and its parameters. Only local-file jobs
// (bucket LocalBucket) can be rebuilt here, through files; for them the file must still
// hold the bytes it had, or the key would differ. Returns a Permanent
// error wrapping ErrJobNotFound when the job is not in the ledger, and a
// Permanent error when the job cannot be rebuilt or the file changed.
func (s *Store) LedgerJob(ctx context.Context, jobID string, files ingest.FileSource) (ingest.Job, error) {
	row, err := s.q.JobSnapshot(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.Job{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("job %s: %w", jobID, ingest.ErrJobNotFound)}
	}
	if err != nil {
		return ingest.Job{}, ingest.Transientf("ledger %s: %w", jobID, err)
	}
	return ledgerJob(row, files)
}

func ledgerJob(row db.JobSnapshotRow, files ingest.FileSource) (ingest.Job, error) {
	if row.SourceBucket != ingest.LocalBucket {
		return ingest.Job{}, ingest.Permanentf("job %s: source %s is not a local file; replay it by delivering its event again",
			row.JobID, sourceURL(row.SourceBucket, row.SourceKey))
	}
	p, err := paramsFromLedger(row.Params)
	if err != nil {
		return ingest.Job{}, ingest.Permanentf("job %s: params: %w", row.JobID, err)
	}
	src, fetch, err := files.Source(row.SourceKey)
	if err != nil {
		return ingest.Job{}, err
	}
	job, err := ingest.NewJob(src, p, fetch)
	if err != nil {
		return ingest.Job{}, err
	}
	if job.ID != row.JobID {
		return ingest.Job{}, ingest.Permanentf("job %s: %s no longer gives this job (its key is now %s): the file changed, or the job's parameters cannot be rebuilt",
			row.JobID, src, job.ID)
	}
	return job, nil
}

// paramsFromLedger is the inverse of Params.Map.
func paramsFromLedger(raw []byte) (ingest.Params, error) {
	var m struct {
		Version         string   `json:"version"`
		Target          string   `json:"target_table"`
		Invalid         string   `json:"invalid"`
		NullGeometry    string   `json:"null_geometry"`
		WrongType       string   `json:"wrong_type"`
		SourceSRID      int      `json:"source_srid"`
		DefaultEncoding string   `json:"default_encoding"`
		Replaces        string   `json:"replaces"`
		Layers          []string `json:"layers"`
		GeometryField   string   `json:"geometry_field"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return ingest.Params{}, err
	}
	p := ingest.Params{Target: m.Target, PipelineVersion: m.Version, Invalid: m.Invalid, NullGeometry: m.NullGeometry,
		WrongType: m.WrongType, SourceSRID: m.SourceSRID, DefaultEncoding: m.DefaultEncoding, Replaces: m.Replaces,
		Layers: m.Layers, GeometryField: m.GeometryField}
	return p, p.Validate()
}
