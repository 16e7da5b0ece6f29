package postgis

import (
	"context"
	"fmt"
	"sort"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgtype"
)

// VerifyScope is Verify's incremental mode (ingest.ConsoleReader.VerifyScope): the
// checks of Verify, for the sources and claims in scope only (see
// query/verify.sql for what the scope holds):
//
//   - every current job of a source in scope: ledger count, area and
//     checksum against its rows, the area sample;
//   - every other job of those sources (replaced, retired, superseded,
//     deleted): no rows left under its job_ref; and no job's rows in the
//     other table;
//   - the sources' current generation against jobs.status;
//   - claims and ledger agree, for the jobs of those sources and for every
//     claim changed in scope;
//   - stored report assignments of those sources' current parcel jobs;
//   - the stored typed columns of those current jobs' rows against their
//     records (geoingest_verify_typed of those jobs, migration 0055).
//
// What it cannot see: feature rows under a job_ref that no ledger job
// has (the full check's stray scan finds them), and a job that changed
// without its source, claim or ledger row changing (a row edited by hand
// in an old job: the full check, run less often, finds those).
func (c *Console) VerifyScope(ctx context.Context, scope ingest.VerifyScope) (*ingest.Verification, error) {
	if scope.IsZero() {
		return c.Verify(ctx)
	}
	since := pgtype.Timestamptz{Time: scope.Since, Valid: true}
	if scope.Since.IsZero() {
		since = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	v := &ingest.Verification{Scope: scope}
	jobs, err := c.q.VerifyScopeJobs(ctx, db.VerifyScopeJobsParams{
		RelTol: geodesic.RelTolerance, AbsTol: geodesic.AbsTolerance, Since: since, Prefix: scope.Source})
	if err != nil {
		return nil, ingest.Transientf("verify jobs: %w", err)
	}
	srcs := map[string]bool{}
	var current []string // the current jobs in scope, whose typed columns are checked
	for _, j := range jobs {
		if !j.InLedger {
			v.Claims++
			if j.ClaimState == "COMMITTED" {
				v.Add(j.JobID, "claims", "COMMITTED claim without a ledger row")
			}
			continue
		}
		v.Jobs++
		srcs[j.SourceBucket+"\n"+j.SourceKey+"\n"+j.TargetTable] = true
		if j.ClaimState != "" {
			v.Claims++
		}
		if j.ClaimState != "COMMITTED" {
			state := j.ClaimState
			if state == "" {
				state = "no claim"
			}
			v.Add(j.JobID, "claims", "ledger row without a COMMITTED claim ("+state+")")
		}
		if j.OtherCount > 0 {
			v.Add(j.JobID, "stray features", fmt.Sprintf("%d rows in the table other than %s, the job's target", j.OtherCount, j.TargetTable))
		}
		if j.Status != "current" {
			if j.HeldCount > 0 {
				v.Add(j.JobID, "stray features", fmt.Sprintf("%d rows in %s whose job is %s, not current", j.HeldCount, j.TargetTable, j.Status))
			}
			continue
		}
		v.CurrentJobs++
		current = append(current, j.JobID)
		if j.TargetTable == "parcels" {
			v.Parcels += j.HeldCount
		} else {
			v.AdminUnits += j.HeldCount
		}
		checkCurrentJob(v, currentJob{
			JobID: j.JobID, TargetTable: j.TargetTable, SourceBucket: j.SourceBucket, SourceKey: j.SourceKey,
			LedgerCount: j.LedgerCount, LedgerAreaM2: j.LedgerAreaM2, LedgerChecksum: j.LedgerChecksum,
			HeldCount: j.HeldCount, HeldAreaM2: j.HeldAreaM2, HeldChecksum: j.HeldChecksum, AreaOff: j.AreaOff,
		})
	}
	v.Sources = int64(len(srcs))

	if len(current) > 0 {
		typed, err := c.q.VerifyTypedJobs(ctx, current)
		if err := addTypedProblems(v, typed, err); err != nil {
			return nil, err
		}
	}

	bad, err := c.q.VerifyScopeSources(ctx, db.VerifyScopeSourcesParams{Since: since, Prefix: scope.Source})
	if err != nil {
		return nil, ingest.Transientf("verify sources: %w", err)
	}
	for _, r := range bad {
		v.Add(r.JobID, "sources", fmt.Sprintf("%s: %s %s pipeline version %s", r.Problem,
			sourceURL(r.SourceBucket, r.SourceKey), r.TargetTable, r.PipelineVersion))
	}

	rows, err := c.q.VerifyScopeReportAssignments(ctx, db.VerifyScopeReportAssignmentsParams{Since: since, Prefix: scope.Source})
	if err != nil {
		return nil, ingest.Transientf("verify report assignments: %w", err)
	}
	for _, r := range rows {
		checkAssignment(v, assignment{JobID: r.JobID, Assigned: r.Assigned, CellCount: r.CellCount,
			CellAreaM2: r.CellAreaM2, LedgerCount: r.LedgerCount, LedgerAreaM2: r.LedgerAreaM2})
	}
	sort.SliceStable(v.Problems, func(i, j int) bool { return v.Problems[i].JobID < v.Problems[j].JobID })
	return v, nil
}
