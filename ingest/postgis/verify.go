package postgis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgconn"
)

// Verify reconciles the database from its own contents, proving that every
// committed job's features are present exactly once:
//
//   - for every current job, the ledger's feature_count equals the number
//     of rows its target table holds for the job, and total_area_m2 the
//     sum of their area_m2 within AreaTolerance (relative), and the
//     checksum of its rows (index, properties, geometry) recorded at write
//     time; and every row has an area_m2 and, in a sample of one in 16,
//     it is ST_Area(geom::geography) within geodesic's tolerance
//     (RelTolerance of itself plus AbsTolerance m²);
//   - no feature row belongs to a job that is missing from the ledger, not
//     current, or aimed at the other table;
//   - no source has two current jobs, every current job is its source's
//     current_job_id and every current_job_id is a current job of that
//     source;
//   - every ledger job has a COMMITTED claim, and no COMMITTED claim lacks
//     a ledger row;
//   - every stored typed column (typed.go) of a row written under a
//     mapping is the server's cast of its record's value, and every one of
//     a row written without is NULL (geoingest_verify_typed);
//   - every stored report assignment of a current parcel job to the
//     current admin generation of its pipeline version (see
//     RefreshReports) holds as many parcels as the ledger records, with
//     the same area within AreaTolerance; a job with no stored assignment
//     is listed in PendingAssignments, not as a problem.
//
// It only reads. Inconsistencies come back as Problems with a nil error;
// the error is Transient when the database could not be read.
func (c *Console) Verify(ctx context.Context) (*ingest.Verification, error) {
	v := &ingest.Verification{}
	counts, err := c.q.VerifyCounts(ctx)
	if err != nil {
		return nil, ingest.Transientf("verify: %w", err)
	}
	v.Jobs, v.CurrentJobs, v.Sources, v.Claims = counts.Jobs, counts.CurrentJobs, counts.Sources, counts.Claims
	v.Parcels, v.AdminUnits = counts.Parcels, counts.AdminUnits

	jobs, err := c.q.VerifyCurrentJobs(ctx, db.VerifyCurrentJobsParams{RelTol: geodesic.RelTolerance, AbsTol: geodesic.AbsTolerance})
	if err != nil {
		return nil, ingest.Transientf("verify jobs: %w", err)
	}
	for _, j := range jobs {
		checkCurrentJob(v, currentJob(j))
	}

	stray, err := c.q.VerifyStrayFeatures(ctx)
	if err != nil {
		return nil, ingest.Transientf("verify features: %w", err)
	}
	for _, f := range stray {
		why := "whose job is not in the ledger"
		if f.JobStatus != "" {
			why = fmt.Sprintf("whose job is %s, not current (or targets the other table)", f.JobStatus)
		}
		v.Add(f.JobID, "stray features", fmt.Sprintf("%d rows in %s %s", f.N, f.TargetTable, why))
	}

	if err := c.verifyPending(ctx, v); err != nil { // pending_verify.go
		return nil, err
	}
	if err := c.verifyQuarantine(ctx, v); err != nil {
		return nil, err
	}
	typed, err := c.q.VerifyTypedJobs(ctx, nil) // nil: every job
	if err := addTypedProblems(v, typed, err); err != nil {
		return nil, err
	}
	srcs, err := c.q.VerifySources(ctx)
	if err != nil {
		return nil, ingest.Transientf("verify sources: %w", err)
	}
	for _, r := range srcs {
		v.Add(r.JobID, "sources", fmt.Sprintf("%s: %s %s pipeline version %s", r.Problem,
			sourceURL(r.SourceBucket, r.SourceKey), r.TargetTable, r.PipelineVersion))
	}

	claims, err := c.q.VerifyClaims(ctx)
	if err != nil {
		return nil, ingest.Transientf("verify claims: %w", err)
	}
	for _, c := range claims {
		if c.InLedger {
			state := c.ClaimState
			if state == "" {
				state = "no claim"
			}
			v.Add(c.JobID, "claims", "ledger row without a COMMITTED claim ("+state+")")
		} else {
			v.Add(c.JobID, "claims", "COMMITTED claim without a ledger row")
		}
	}
	if err := c.verifyAssignments(ctx, v); err != nil {
		return nil, err
	}
	sort.SliceStable(v.Problems, func(i, j int) bool { return v.Problems[i].JobID < v.Problems[j].JobID })
	return v, nil
}

// verifyAssignments adds a "report assignment" problem for every current
// parcel job whose stored assignment disagrees with the ledger, and lists
// the jobs with none stored yet in v.PendingAssignments.
func (c *Console) verifyAssignments(ctx context.Context, v *ingest.Verification) error {
	rows, err := c.q.VerifyReportAssignments(ctx)
	if err != nil {
		return ingest.Transientf("verify report assignments: %w", err)
	}
	for _, r := range rows {
		checkAssignment(v, assignment(r))
	}
	return nil
}

// currentJob is what the checks of a current job compare: the ledger's
// numbers and what its target table holds under its job_ref.
type currentJob struct {
	JobID          string
	TargetTable    string
	SourceBucket   string
	SourceKey      string
	LedgerCount    int64
	LedgerAreaM2   float64
	LedgerChecksum string
	HeldCount      int64
	HeldAreaM2     float64
	HeldChecksum   string
	AreaOff        int64
}

// checkCurrentJob adds the problems of one current job: feature count,
// checksum, row area (sampled), total area.
func checkCurrentJob(v *ingest.Verification, j currentJob) {
	if j.LedgerCount != j.HeldCount {
		v.Add(j.JobID, "feature count", fmt.Sprintf("ledger records %d features, %s holds %d for the job (%s)",
			j.LedgerCount, j.TargetTable, j.HeldCount, sourceURL(j.SourceBucket, j.SourceKey)))
	}
	if j.LedgerCount == j.HeldCount && j.LedgerChecksum != j.HeldChecksum {
		v.Add(j.JobID, "checksum", fmt.Sprintf("%s rows of the job changed since they were written (checksum %s, ledger recorded %s; %s)",
			j.TargetTable, j.HeldChecksum, j.LedgerChecksum, sourceURL(j.SourceBucket, j.SourceKey)))
	}
	if j.AreaOff > 0 {
		v.Add(j.JobID, "row area", fmt.Sprintf("%d %s rows of the job have an area_m2 that is missing or differs from ST_Area(geom::geography) (of the rows checked: those with no area, and one in 16; %s)",
			j.AreaOff, j.TargetTable, sourceURL(j.SourceBucket, j.SourceKey)))
	}
	if !areaEqual(j.LedgerAreaM2, j.HeldAreaM2) {
		v.Add(j.JobID, "area", fmt.Sprintf("ledger records %.3f m², %s holds %.3f m² for the job (relative difference %.3g)",
			j.LedgerAreaM2, j.TargetTable, j.HeldAreaM2, relDiff(j.LedgerAreaM2, j.HeldAreaM2)))
	}
}

// assignment is a current parcel job's stored report assignment to its
// version's current admin generation, beside the ledger.
type assignment struct {
	JobID           string
	PipelineVersion string
	LedgerCount     int64
	LedgerAreaM2    float64
	Assigned        bool
	CellCount       int64
	CellAreaM2      float64
}

// checkAssignment lists a job with no stored assignment as pending and
// adds a problem when the stored one disagrees with the ledger.
func checkAssignment(v *ingest.Verification, r assignment) {
	switch {
	case !r.Assigned:
		v.PendingAssignments = append(v.PendingAssignments, r.JobID)
	case r.CellCount != r.LedgerCount:
		v.Add(r.JobID, "report assignment", fmt.Sprintf("assignment holds %d parcels, the ledger records %d", r.CellCount, r.LedgerCount))
	case !areaEqual(r.CellAreaM2, r.LedgerAreaM2):
		v.Add(r.JobID, "report assignment", fmt.Sprintf("assignment holds %.3f m², the ledger records %.3f m² (relative difference %.3g)",
			r.CellAreaM2, r.LedgerAreaM2, relDiff(r.CellAreaM2, r.LedgerAreaM2)))
	}
}

func areaEqual(a, b float64) bool { return relDiff(a, b) <= ingest.AreaTolerance }

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

func sourceURL(bucket, key string) string { return ingest.Source{Bucket: bucket, Key: key}.String() }

// addTypedProblems adds a "typed columns" problem for each job of rows
// (geoingest_verify_typed's answer, err its error): a schema before
// migration 0043 has nothing to check, and the analyst may not run it
// (it reads the storage with the owner's rights), which v then lists as
// unchecked. Any other error is returned, Transient.
func addTypedProblems(v *ingest.Verification, rows []db.VerifyTypedJobsRow, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42883":
		// a schema before migration 0043: no stored typed columns to check
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		v.Unchecked = append(v.Unchecked, "the stored typed columns against their records (run verify as the writer)")
		return nil
	case err != nil:
		return ingest.Transientf("verify typed columns: %w", err)
	}
	for _, r := range rows {
		v.Add(r.JobID, "typed columns", fmt.Sprintf("%d rows in %s whose typed columns are not their records' values (migration 0036)", r.N, r.TargetTable))
	}
	return nil
}
