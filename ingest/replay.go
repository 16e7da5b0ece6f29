package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// FeatureSum summarises the feature rows of one job: their number, their
// area on the spheroid and their checksum, the sum of geoingest_row_hash
// (feature_index, properties, geometry) over the rows (migration 0005).
type FeatureSum struct {
	JobID    string
	N        int64
	AreaM2   float64
	Checksum string
}

// Snapshot is what a replayed delivery must leave unchanged: a job's
// ledger row, its claim, its source's current job and the features of both.
type Snapshot struct {
	JobID        string
	Status       string
	CommittedAt  time.Time
	FeatureCount int64
	TotalAreaM2  float64
	ContentHash  string
	// FeaturesChecksum is the checksum of the job's rows recorded in the
	// ledger at write time.
	FeaturesChecksum string
	ClaimState       string
	Target           string
	// SourceCurrent is the job id of the source's current generation ("" if
	// none).
	SourceCurrent string
	// Features are the job's feature rows; SourceFeatures those of the
	// source's current job (the same when the job is current).
	Features       FeatureSum
	SourceFeatures FeatureSum
}

// ErrJobNotFound is returned (wrapped in a Permanent error) when the ledger
// has no row for a job.
var ErrJobNotFound = errors.New("job not in the ledger")

// Inconsistencies lists how the snapshot disagrees with its own ledger: a
// current job whose rows differ in number or area (AreaTolerance) from
// what the ledger recorded, or a job that is not current but has rows.
// That is how tampering that happened before the replay shows.
func (s Snapshot) Inconsistencies() []string {
	var out []string
	if s.Status == "current" {
		if s.Features.N != s.FeatureCount {
			out = append(out, fmt.Sprintf("job %s: ledger records %d features, %s holds %d", s.JobID, s.FeatureCount, s.Target, s.Features.N))
		}
		if !areaEqual(s.Features.AreaM2, s.TotalAreaM2) {
			out = append(out, fmt.Sprintf("job %s: ledger records %.3f m², %s holds %.3f m²", s.JobID, s.TotalAreaM2, s.Target, s.Features.AreaM2))
		}
		if s.Features.Checksum != s.FeaturesChecksum {
			out = append(out, fmt.Sprintf("job %s: %s rows changed since they were written (checksum %s, ledger recorded %s)",
				s.JobID, s.Target, s.Features.Checksum, s.FeaturesChecksum))
		}
		if s.SourceCurrent != s.JobID {
			out = append(out, fmt.Sprintf("job %s is current but its source's current job is %q", s.JobID, s.SourceCurrent))
		}
	} else if s.Features.N != 0 {
		out = append(out, fmt.Sprintf("job %s is %s but %s holds %d rows for it", s.JobID, s.Status, s.Target, s.Features.N))
	}
	if s.ClaimState != "COMMITTED" {
		out = append(out, fmt.Sprintf("job %s: claim is %q, not COMMITTED", s.JobID, s.ClaimState))
	}
	return out
}

// Diff lists what differs between two snapshots of the same job.
func (s Snapshot) Diff(after Snapshot) []string {
	var out []string
	add := func(what string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s changed: %v -> %v", what, a, b))
		}
	}
	add("status", s.Status, after.Status)
	add("committed_at", s.CommittedAt.UTC().Format(time.RFC3339Nano), after.CommittedAt.UTC().Format(time.RFC3339Nano))
	add("ledger feature_count", s.FeatureCount, after.FeatureCount)
	add("ledger total_area_m2", s.TotalAreaM2, after.TotalAreaM2)
	add("content_hash", s.ContentHash, after.ContentHash)
	add("claim state", s.ClaimState, after.ClaimState)
	add("source's current job", s.SourceCurrent, after.SourceCurrent)
	add("job's feature rows", s.Features.N, after.Features.N)
	add("job's features checksum", s.Features.Checksum, after.Features.Checksum)
	add("source's feature rows", s.SourceFeatures.N, after.SourceFeatures.N)
	add("source's features checksum", s.SourceFeatures.Checksum, after.SourceFeatures.Checksum)
	return out
}

// ReplayReport is what Replay observed.
type ReplayReport struct {
	JobID string
	// First is the delivery that Replay made because the job was not in
	// the ledger yet (Outcome "" when it was).
	First Result
	// Second is the replayed delivery.
	Second        Result
	Before, After Snapshot
	// Changes lists every difference and inconsistency; empty means the
	// replay left the tables unchanged.
	Changes []string
}

// OK reports whether the replay changed nothing.
func (r *ReplayReport) OK() bool { return len(r.Changes) == 0 }

// Replay delivers job again and checks that nothing changed. When the
// job is not in the ledger yet it is delivered once first. The snapshot
// taken before the replayed delivery must agree with the ledger (see
// Snapshot.Inconsistencies) and equal the snapshot after it (Diff); the
// replayed delivery must be a duplicate. Every difference is listed in
// Changes (the replay did its job and found a problem: nil error). The
// error is set when a delivery failed or the database could not be read.
// svc delivers the job; the snapshots are read from ledger.
func Replay(ctx context.Context, svc *Service, ledger Snapshots, job Job) (*ReplayReport, error) {
	rep := &ReplayReport{JobID: job.ID}
	before, err := ledger.Snapshot(ctx, job.ID)
	if errors.Is(err, ErrJobNotFound) {
		rep.First = svc.Run(ctx, job)
		if rep.First.Outcome == Failed {
			return rep, fmt.Errorf("first delivery: %w", rep.First.Err)
		}
		before, err = ledger.Snapshot(ctx, job.ID)
	}
	if err != nil {
		return rep, err
	}
	rep.Before = before
	rep.Second = svc.Run(ctx, job)
	if rep.Second.Outcome == Failed {
		return rep, fmt.Errorf("replayed delivery: %w", rep.Second.Err)
	}
	if rep.After, err = ledger.Snapshot(ctx, job.ID); err != nil {
		return rep, err
	}
	rep.Changes = append(rep.Changes, before.Inconsistencies()...)
	if !rep.Second.Outcome.Duplicate() {
		rep.Changes = append(rep.Changes, fmt.Sprintf("replayed delivery was %s, not a duplicate", rep.Second.Outcome))
	}
	rep.Changes = append(rep.Changes, before.Diff(rep.After)...)
	return rep, nil
}
