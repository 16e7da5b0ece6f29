package postgis

import (
	"context"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgtype"
)

// Prune applies the retention policy p (see ingest.RetentionPolicy):
//
//   - ledger rows of non-current jobs beyond the newest p.KeepSuperseded
//     of their source and older than p.MinAge, with their claims (and
//     claim events), CRS records, report assignments and the marks of
//     their generations in geoingest_hashes_current; but only a job
//     whose source's current_order is strictly newer than the job's own
//     order token (ingest.CompareOrder), so that a late redelivery of it
//     is superseded in the write gate, as it was before. A job with the
//     same order as its source's newest version (a generation replaced by
//     a repair, `--policy replace`, which carries its order) is kept: its
//     redelivery would otherwise be written again;
//   - claims that never committed, unchanged for p.StaleClaimAge;
//   - report assignments no report can use (PruneReportAssignments).
//
// Sources are never removed. Jobs go in batches of p.Batch, each in its
// own transaction, oldest first; a failure leaves the batches done
// removed. Errors are Transient.
func (s *Store) Prune(ctx context.Context, p ingest.RetentionPolicy) (ingest.PruneResult, error) {
	start := time.Now()
	var res ingest.PruneResult
	if p.Batch <= 0 {
		p.Batch = 1000
	}
	if p.KeepSuperseded < 0 {
		p.KeepSuperseded = 0
	}
	before := pgtype.Timestamptz{Time: start.Add(-p.MinAge), Valid: true}
	// Candidates that stay (kept by order; in a dry run, every one) come
	// back on every pass: ask for that many more, and skip them.
	seen := map[string]bool{}
	stay := 0
	for {
		max := p.Batch + stay
		cands, err := s.q.PruneJobCandidates(ctx, db.PruneJobCandidatesParams{
			Keep: int32(p.KeepSuperseded), Before: before, MaxRows: int32(max)})
		if err != nil {
			return res, ingest.Transientf("prune: %w", err)
		}
		var ids []string
		fresh := 0
		for _, c := range cands {
			if seen[c.JobID] {
				continue
			}
			seen[c.JobID] = true
			fresh++
			if ingest.CompareOrder(c.CurrentOrder, c.OrderToken) > 0 {
				ids = append(ids, c.JobID)
			} else {
				res.KeptByOrder++
				stay++
			}
		}
		switch {
		case len(ids) == 0:
		case p.DryRun:
			res.Jobs += int64(len(ids))
			stay += len(ids)
		default:
			ingest.HookAt(ctx, ingest.HookPruneBatch, ingest.HookWhere{Job: ids[0]})
			n, err := s.q.PruneJobs(ctx, ids)
			if err != nil {
				return res, ingest.Transientf("prune: %w", err)
			}
			res.Jobs += n.Jobs
			res.Claims += n.Claims
			res.Assignments += n.Assignments
		}
		if fresh == 0 || len(cands) < max {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, ingest.Transientf("prune: %w", err)
		}
	}
	if p.StaleClaimAge > 0 && !p.DryRun {
		n, err := s.q.PruneStaleClaims(ctx, pgtype.Timestamptz{Time: start.Add(-p.StaleClaimAge), Valid: true})
		if err != nil {
			return res, ingest.Transientf("prune claims: %w", err)
		}
		res.StaleClaims = n
	}
	if !p.DryRun {
		n, err := s.q.PruneReportAssignments(ctx)
		if err != nil {
			return res, ingest.Transientf("prune report assignments: %w", err)
		}
		res.ReportAssignments = n
	}
	res.Duration = time.Since(start)
	return res, nil
}
