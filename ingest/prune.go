package ingest

import (
	"context"
	"fmt"
	"time"
)

// Retention defaults (geoingest prune, serve --prune-interval).
const (
	// DefaultKeepSuperseded is how many non-current jobs (superseded,
	// replaced, retired, deleted) of each source keep their ledger row and
	// claim beyond the current one.
	DefaultKeepSuperseded = 10
	// DefaultPruneMinAge: no ledger row younger than this is removed,
	// whatever the count: a redelivery is most likely within SQS's 14 days.
	DefaultPruneMinAge = 14 * 24 * time.Hour
	// DefaultStaleClaimAge: a claim that never committed (FAILED, or an
	// expired lease) and has not changed for this long is removed.
	DefaultStaleClaimAge = 30 * 24 * time.Hour
)

// RetentionPolicy says what Prune keeps. Prune always keeps, whatever the
// policy: every current generation's ledger row, claim, CRS records and
// report assignments (what verify and replay read); every source row (its
// current_order is what orders a late redelivery); and every job whose
// redelivery would not be superseded by order: a job is removed only when
// its source has applied a strictly newer version since, so that a late
// redelivery of a removed job is committed as superseded again and never
// becomes a current generation (a repair's redelivery, which names the
// generation it replaced, fails its precondition instead).
type RetentionPolicy struct {
	// KeepSuperseded: the newest non-current jobs kept per source.
	KeepSuperseded int
	// MinAge: jobs committed more recently are kept.
	MinAge time.Duration
	// StaleClaimAge: claims that never committed, unchanged for longer,
	// are removed. Zero keeps them.
	StaleClaimAge time.Duration
	// Batch: jobs removed per transaction (default 1000).
	Batch int
	// DryRun: count what would be removed, remove nothing.
	DryRun bool
}

// DefaultRetention is the policy of `geoingest prune` without flags.
func DefaultRetention() RetentionPolicy {
	return RetentionPolicy{KeepSuperseded: DefaultKeepSuperseded, MinAge: DefaultPruneMinAge,
		StaleClaimAge: DefaultStaleClaimAge, Batch: 1000}
}

// PruneResult is what Prune removed (or, in a dry run, would remove).
type PruneResult struct {
	// Jobs: ledger rows, with their job_crs rows; Claims: their claims
	// (and claim events); Assignments: their report assignments.
	Jobs, Claims, Assignments int64
	// StaleClaims: claims that never committed.
	StaleClaims int64
	// ReportAssignments: assignments no report can use (retired admin
	// generations, jobs no longer current).
	ReportAssignments int64
	// KeptByOrder: jobs past the count and age that were kept because
	// their source's newest version is not strictly newer than theirs.
	KeptByOrder int64
	Duration    time.Duration
}

func (r PruneResult) String() string {
	return fmt.Sprintf("%d ledger rows (%d claims, %d report assignments), %d stale claims, %d retired report assignments removed; %d kept by order; %.2f s",
		r.Jobs, r.Claims, r.Assignments, r.StaleClaims, r.ReportAssignments, r.KeptByOrder, r.Duration.Seconds())
}

// Pruner removes what the retention policy no longer keeps.
type Pruner interface {
	Prune(ctx context.Context, p RetentionPolicy) (PruneResult, error)
}
