package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// RefreshResult is what RefreshReports did.
type RefreshResult struct {
	// Assigned is the number of (parcel job, admin generation) pairs this
	// call computed; Parcels the parcels they hold.
	Assigned int
	Parcels  int64
	// FromWriter is how many of the Assigned pairs were stored from the
	// cells their writer computed as the job streamed, not computed.
	FromWriter int
	// FromChanges is how many were had from the cells of the generation
	// they replaced, less and plus the parcels whose geometry changed.
	FromChanges int
	// Pruned is the number of assignments deleted because no report can
	// use them any more.
	Pruned int64
	// Duration is the whole call's.
	Duration time.Duration
}

// ParcelRefresher is what the Service refreshes the report assignments
// with after a committed job (Reports.RefreshReports and
// RefreshParcelJob).
type ParcelRefresher interface {
	ReportRefresher
	RefreshParcelJob(ctx context.Context, jobID, replaced string) (RefreshResult, error)
}

// refreshReports brings the report assignments up to date after a
// committed write or delete of job, unless NoReportRefresh is set or the
// Service has no Reports: for a parcel job, that job's assignment
// (Reports.RefreshParcelJob), whatever the
// number of other jobs; for an admin-unit job, which makes a new admin
// generation, every parcel job of its version (Reports.RefreshReports). A
// failure is logged at WARN, not returned: the job is committed and must
// be acked, and the reports stay exact without the assignments (only
// slower) until the next refresh (after the next job, or before the next
// `geoingest report`).
func (s *Service) refreshReports(ctx context.Context, log *slog.Logger, job Job, wr WriteResult) {
	if s.NoReportRefresh || s.Reports == nil {
		return
	}
	var r RefreshResult
	var err error
	switch {
	case job.Params.Target != "parcels":
		r, err = s.Reports.RefreshReports(ctx)
	case job.Delete:
		r, err = s.Reports.RefreshParcelJob(ctx, "", wr.Replaced)
	default:
		r, err = s.Reports.RefreshParcelJob(ctx, job.ID, wr.Replaced)
	}
	if err != nil {
		log.Warn("report assignments not refreshed; reports compute what is missing until the next refresh", "error", err.Error())
		return
	}
	if r.Assigned > 0 || r.Pruned > 0 {
		log.Info("report assignments refreshed", "assigned", r.Assigned, "from_writer", r.FromWriter, "from_changes", r.FromChanges, "parcels", r.Parcels,
			"pruned", r.Pruned, "seconds", r.Duration.Seconds())
	}
}

func (r RefreshResult) String() string {
	return fmt.Sprintf("%d job assignments computed (%d parcels), %d pruned, in %.2f s",
		r.Assigned, r.Parcels, r.Pruned, r.Duration.Seconds())
}
