package postgis

import (
	"context"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// RefreshReports brings the report assignments of migration 0006 up to
// date: every current parcel job is assigned to the current admin
// generation of its pipeline version (its cells per admin unit are
// computed by geoingest_report_compute and stored), and assignments that
// no report can use any more are deleted.
//
// Each pair is computed in its own transaction gated like the write gate:
// the pair's report_assignments row is inserted ON CONFLICT DO NOTHING
// first, so a pair is computed exactly once however many workers refresh
// at the same time (a concurrent refresh of the same pair waits for the
// first and then skips it), and a crash leaves either the whole pair or
// nothing. It is idempotent: a second call with nothing new does one
// query. The reports never depend on it for correctness (they compute
// whatever is not assigned yet), only for speed.
//
// Returns a Transient error when the database fails; the pairs committed
// before the failure stay.
//
// It first prepares the current admin generation of every pipeline version
// (geoingest_report_prepare_admin, migration 0015: its overlapping units,
// each unit's longest edge and the units' union, stored once), so that
// the first parcel job after an admin file does not pay for it, and
// deletes the prepared generations that are no longer current.
func (s *Store) RefreshReports(ctx context.Context) (ingest.RefreshResult, error) {
	start := time.Now()
	gens, err := s.q.CurrentAdminGenerations(ctx)
	if err != nil {
		return ingest.RefreshResult{}, ingest.Transientf("refresh reports: admin generations: %w", err)
	}
	for _, g := range gens {
		if len(g.UnitIds) == 0 {
			continue
		}
		if _, err := s.q.PrepareReportAdmin(ctx, db.PrepareReportAdminParams{
			AdminGeneration: g.AdminGeneration, PipelineVersion: g.PipelineVersion, UnitIds: g.UnitIds}); err != nil {
			return ingest.RefreshResult{}, ingest.Transientf("refresh reports: prepare admin generation: %w", err)
		}
	}
	res, err := s.refresh(ctx, "")
	if err != nil {
		return res, err
	}
	if res.Pruned, err = s.q.PruneReportAssignments(ctx); err != nil {
		return res, ingest.Transientf("refresh reports: prune: %w", err)
	}
	if _, err = s.q.PruneReportAdminGenerations(ctx); err != nil {
		return res, ingest.Transientf("refresh reports: prune admin generations: %w", err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// RefreshParcelJob is RefreshReports for one parcel job just written: it
// assigns that job (if it is current and not assigned yet; none when
// jobID is "", as for a delete) and deletes the assignments of the job it
// replaced or retired (replaced may be ""). Its cost does
// not grow with the number of other jobs, so it can run after every one.
func (s *Store) RefreshParcelJob(ctx context.Context, jobID, replaced string) (ingest.RefreshResult, error) {
	var res ingest.RefreshResult
	var err error
	if jobID != "" {
		if res, err = s.refresh(ctx, jobID); err != nil {
			return res, err
		}
	}
	if replaced == "" {
		return res, nil
	}
	if res.Pruned, err = s.q.DeleteReportAssignmentsOfJob(ctx, replaced); err != nil {
		return res, ingest.Transientf("refresh reports: prune: %w", err)
	}
	return res, nil
}

// refresh assigns every stale current parcel job, or only jobID.
func (s *Store) refresh(ctx context.Context, jobID string) (ingest.RefreshResult, error) {
	start := time.Now()
	var res ingest.RefreshResult
	stale, err := s.q.StaleReportAssignments(ctx, jobID)
	if err != nil {
		return res, ingest.Transientf("refresh reports: %w", err)
	}
	overlapping := map[string][]int64{} // by admin generation
	for _, st := range stale {
		ov, ok := overlapping[st.AdminGeneration]
		if !ok && len(st.UnitIds) > 0 {
			// Prepared once per admin generation (a primary-key lookup
			// once it is).
			if ov, err = s.q.PrepareReportAdmin(ctx, db.PrepareReportAdminParams{
				AdminGeneration: st.AdminGeneration, PipelineVersion: st.PipelineVersion, UnitIds: st.UnitIds}); err != nil {
				return res, ingest.Transientf("refresh reports: prepare admin generation: %w", err)
			}
			overlapping[st.AdminGeneration] = ov
		}
		n, done, how, err := s.assign(ctx, st, ov)
		if err != nil {
			return res, err
		}
		if done {
			res.Assigned++
			res.Parcels += n
		}
		switch how {
		case fromWriter:
			res.FromWriter++
		case fromChanges:
			res.FromChanges++
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// How a pair's cells were had.
type cellsSource int

const (
	computedWhole cellsSource = iota // geoingest_report_compute
	fromWriter                       // the writer's, as the job streamed
	fromChanges                      // the base's, less and plus what changed
)

// assign computes one pair in its own transaction: from its base's cells
// and its changes, or from the cells the writer computed, or whole. done
// is false when the pair was computed already (by someone else
// meanwhile).
func (s *Store) assign(ctx context.Context, st db.StaleReportAssignmentsRow, overlapping []int64) (parcels int64, done bool, how cellsSource, err error) {
	kept, haveKept := s.takeCells(st.ParcelJobID)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, false, computedWhole, ingest.Transientf("refresh reports: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after commit
	q := s.q.WithTx(tx)
	n, err := q.InsertReportAssignment(ctx, db.InsertReportAssignmentParams{
		ParcelJobID: st.ParcelJobID, AdminGeneration: st.AdminGeneration,
		PipelineVersion: st.PipelineVersion, AdminJobIds: nonNil(st.AdminJobIds),
	})
	if err != nil {
		return 0, false, computedWhole, ingest.Transientf("refresh reports: job %s: %w", st.ParcelJobID, err)
	}
	if n == 0 {
		return 0, false, computedWhole, nil
	}
	if haveKept && len(st.UnitIds) > 0 {
		// Computed by the writer as the job streamed (reportcells.go).
		var given bool
		parcels, given, err = insertGivenCells(ctx, q, st, kept)
		if err != nil {
			return 0, false, computedWhole, ingest.Transientf("refresh reports: job %s: %w", st.ParcelJobID, err)
		}
		if given {
			ingest.HookAt(ctx, ingest.HookBeforeRefreshCommit, ingest.HookWhere{Job: st.ParcelJobID})
			if err := tx.Commit(ctx); err != nil {
				return 0, false, computedWhole, ingest.Transientf("refresh reports: commit: %w", err)
			}
			return parcels, true, fromWriter, nil
		}
	}
	if len(st.UnitIds) > 0 {
		// A version that replaced its base by a change record: its base's
		// cells, less and plus the parcels that changed (migration 0041).
		row, err := q.InsertReportCellsDelta(ctx, db.InsertReportCellsDeltaParams{
			ParcelJobID: st.ParcelJobID, AdminGeneration: st.AdminGeneration,
			UnitIds: st.UnitIds, OverlappingUnits: nonNil(overlapping),
		})
		switch {
		case err == nil:
			ingest.HookAt(ctx, ingest.HookBeforeRefreshCommit, ingest.HookWhere{Job: st.ParcelJobID})
			if err := tx.Commit(ctx); err != nil {
				return 0, false, computedWhole, ingest.Transientf("refresh reports: commit: %w", err)
			}
			return row.Parcels, true, fromChanges, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, false, computedWhole, ingest.Transientf("refresh reports: job %s: %w", st.ParcelJobID, err)
		}
	}
	if len(st.UnitIds) == 0 {
		var row db.InsertReportCellsNoUnitsRow
		row, err = q.InsertReportCellsNoUnits(ctx, db.InsertReportCellsNoUnitsParams{
			ParcelJobID: st.ParcelJobID, AdminGeneration: st.AdminGeneration})
		parcels = row.Parcels
	} else {
		var row db.InsertReportCellsRow
		row, err = q.InsertReportCells(ctx, db.InsertReportCellsParams{
			ParcelJobID: st.ParcelJobID, AdminGeneration: st.AdminGeneration,
			UnitIds: st.UnitIds, OverlappingUnits: nonNil(overlapping),
		})
		parcels = row.Parcels
	}
	if err != nil {
		return 0, false, computedWhole, ingest.Transientf("refresh reports: job %s: %w", st.ParcelJobID, err)
	}
	ingest.HookAt(ctx, ingest.HookBeforeRefreshCommit, ingest.HookWhere{Job: st.ParcelJobID})
	if err := tx.Commit(ctx); err != nil {
		return 0, false, computedWhole, ingest.Transientf("refresh reports: commit: %w", err)
	}
	return parcels, true, computedWhole, nil
}

// nonNil turns a nil slice into an empty one, which pgx sends as '{}'
// rather than NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
