package ingest

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// AreaTolerance is the relative tolerance within which the area a job's
// ledger row records must equal the area its feature rows hold. Both are
// sums of the same ST_Area values, in different orders.
const AreaTolerance = 1e-9

// VerifyScope restricts verify to what changed: the incremental mode a
// cron runs every few minutes, whose cost follows what changed rather
// than the size of the database. The zero scope is everything (the full
// check).
type VerifyScope struct {
	// Since: only sources changed (a new current generation, a delete, a
	// superseded version committed) and claims changed at or after this
	// time. Zero: no time limit.
	Since time.Time
	// Source: only sources (and claims) whose key starts with it. "": all.
	Source string
}

// IsZero reports whether the scope is everything.
func (s VerifyScope) IsZero() bool { return s.Since.IsZero() && s.Source == "" }

func (s VerifyScope) String() string {
	switch {
	case s.IsZero():
		return "everything"
	case s.Source == "":
		return "changed since " + s.Since.UTC().Format(time.RFC3339)
	case s.Since.IsZero():
		return fmt.Sprintf("sources under %q", s.Source)
	}
	return fmt.Sprintf("sources under %q changed since %s", s.Source, s.Since.UTC().Format(time.RFC3339))
}

// Verification is what Verify checked and what it found.
type Verification struct {
	// Scope is what was checked (zero: everything).
	Scope VerifyScope
	// What was looked at.
	Jobs, CurrentJobs, Sources, Claims, Parcels, AdminUnits int64
	// Problems, ordered by job id then check. Empty when the database is
	// consistent.
	Problems []Problem
	// PendingAssignments lists the current parcel jobs whose report
	// assignment to the current admin generation is not stored yet (a
	// worker died, or the database went away, between the commit and the
	// refresh that follows it). That is not an inconsistency: the reports
	// compute a missing assignment on every call, exactly, until `geoingest
	// report refresh` or serve's periodic refresh stores it.
	PendingAssignments []string
	// Pending is the number of pending generations (versions a guard
	// held, see PendingVersions): not current, invisible to readers,
	// each checked against its own ledger count ("pending generation").
	Pending int64
	// Quarantined is the number of features in the quarantine (features a
	// policy left out, quarantine.go); each job's are checked against its
	// ledger row's counts ("quarantine"): landed plus quarantined is what
	// the file held.
	Quarantined int64
	// Unchecked names the checks this connection's role may not run (the
	// stored typed columns are read by a function only the writer and the
	// owner may execute); the rest was checked. Empty for the writer.
	Unchecked []string
}

// Problem is one inconsistency found by Verify.
type Problem struct {
	// JobID is the offending job (for a stray feature row, the job id the
	// row carries).
	JobID string
	// Check names the check that failed: "feature count", "area",
	// "stray features", "sources", "claims", "report assignment".
	Check string
	// Detail says what differs.
	Detail string
}

func (p Problem) String() string { return fmt.Sprintf("%s  %s: %s", p.JobID, p.Check, p.Detail) }

// OK reports whether no problem was found.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// OffendingJobs returns the distinct offending job ids, sorted.
func (v *Verification) OffendingJobs() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range v.Problems {
		if !seen[p.JobID] {
			seen[p.JobID] = true
			out = append(out, p.JobID)
		}
	}
	sort.Strings(out)
	return out
}

// Add records a problem: job failed check, as detail says.
func (v *Verification) Add(job, check, detail string) {
	v.Problems = append(v.Problems, Problem{JobID: job, Check: check, Detail: detail})
}

func areaEqual(a, b float64) bool { return relDiff(a, b) <= AreaTolerance }

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}
