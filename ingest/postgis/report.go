package postgis

import (
	"context"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// AreaReport runs the admin-unit area report (geoingest_area_by_point_on_surface
// or geoingest_area_by_intersection, migration 0006), counting only current
// generations of the chosen pipeline version for both parcels and admin
// units, and checks the admin layer, all in one read-only snapshot. It
// uses the report assignments where they are current (see
// RefreshReports) and computes the rest. Returns a Permanent error for an
// invalid query, a Transient one when the database fails.
func (s *Store) AreaReport(ctx context.Context, q ingest.AreaQuery) (*ingest.Report, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, ingest.Transientf("area report: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	qt := s.q.WithTx(tx)
	// The locks first, the snapshot after them (retirewhole.go).
	if err := qt.LockFeatureViews(ctx); err != nil {
		return nil, ingest.Transientf("area report: %w", err)
	}
	r := &ingest.Report{Method: q.Method, AdminKey: q.AdminKey, PipelineVersion: q.PipelineVersion, GeneratedAt: time.Now().UTC()}
	if r.PipelineVersion == "" {
		if r.PipelineVersion, err = qt.NewestPipelineVersion(ctx); err != nil {
			return nil, ingest.Transientf("area report: %w", err)
		}
	}
	if !q.AsOf.IsZero() {
		return r, areaAsOf(ctx, qt, q, r)
	}
	version := pgtype.Text{String: r.PipelineVersion, Valid: true}
	switch q.Method {
	case ingest.MethodIntersection:
		rows, err := qt.AreaByIntersection(ctx, db.AreaByIntersectionParams{AdminKey: q.AdminKey, PipelineVersion: version})
		if err != nil {
			return nil, ingest.Transientf("area report: %w", err)
		}
		for _, row := range rows {
			r.Rows = append(r.Rows, ingest.AreaRow{AdminUnit: row.AdminUnit, Parcels: row.Parcels, AreaM2: row.AreaM2, AreaHa: row.AreaHa})
		}
	default:
		rows, err := qt.AreaByPointOnSurface(ctx, db.AreaByPointOnSurfaceParams{AdminKey: q.AdminKey, PipelineVersion: version})
		if err != nil {
			return nil, ingest.Transientf("area report: %w", err)
		}
		for _, row := range rows {
			r.Rows = append(r.Rows, ingest.AreaRow{AdminUnit: row.AdminUnit, Parcels: row.Parcels, AreaM2: row.AreaM2, AreaHa: row.AreaHa})
		}
	}
	total, err := qt.ReportTotal(ctx, r.PipelineVersion)
	if err != nil {
		return nil, ingest.Transientf("area report: total: %w", err)
	}
	r.Total = ingest.AreaRow{AdminUnit: "total", Parcels: total.Parcels, AreaM2: total.AreaM2, AreaHa: total.AreaM2 / 1e4}
	if r.Units, err = unitCells(ctx, qt, q.AdminKey, r.PipelineVersion, q.Shapes); err != nil {
		return nil, err
	}
	for _, u := range r.Units {
		if u.UnitID != 0 {
			continue
		}
		r.Unassigned = ingest.AreaRow{AdminUnit: ingest.UnassignedUnit, Parcels: u.PosParcels, AreaM2: u.PosAreaM2, Unassigned: true}
		if q.Method == ingest.MethodIntersection {
			r.Unassigned.Parcels, r.Unassigned.AreaM2 = u.IntParcels, u.IntAreaM2
		}
		r.Unassigned.AreaHa = r.Unassigned.AreaM2 / 1e4
	}
	// The SQL function names its last row UnassignedUnit when something is
	// in no unit; mark it (a unit whose key is "(unassigned)" is not it).
	if n := len(r.Rows); n > 0 && r.Unassigned.Parcels > 0 && r.Rows[n-1].AdminUnit == ingest.UnassignedUnit {
		r.Rows[n-1].Unassigned = true
	}
	reconcile(r)
	if r.Check, err = adminCheck(ctx, qt, q.AdminKey, r.PipelineVersion, r.Units); err != nil {
		return nil, err
	}
	return r, nil
}

// areaAsOf fills r with the report of q as of q.AsOf (migration 0042):
// the rows from the features of that time, the total from the ledger rows
// of the parcel jobs current then. A time outside the kept history is the
// history's error.
func areaAsOf(ctx context.Context, qt *db.Queries, q ingest.AreaQuery, r *ingest.Report) error {
	at := q.AsOf.UTC()
	r.AsOf = &at
	rows, err := qt.AreaReportAsOf(ctx, db.AreaReportAsOfParams{At: tstz(at), AdminKey: q.AdminKey,
		PipelineVersion: r.PipelineVersion, Intersection: q.Method == ingest.MethodIntersection})
	if err != nil {
		return asOfErr(err)
	}
	for _, row := range rows {
		r.Rows = append(r.Rows, ingest.AreaRow{AdminUnit: row.AdminUnit, Parcels: row.Parcels, AreaM2: row.AreaM2, AreaHa: row.AreaHa})
	}
	total, err := qt.ReportTotalAsOf(ctx, db.ReportTotalAsOfParams{At: tstz(at), PipelineVersion: r.PipelineVersion})
	if err != nil {
		return asOfErr(err)
	}
	r.Total = ingest.AreaRow{AdminUnit: "total", Parcels: total.Parcels, AreaM2: total.AreaM2, AreaHa: total.AreaM2 / 1e4}
	if n := len(r.Rows); n > 0 && r.Rows[n-1].AdminUnit == ingest.UnassignedUnit {
		r.Rows[n-1].Unassigned = true
		r.Unassigned = r.Rows[n-1]
	}
	reconcile(r)
	return nil
}

// reconcile sets r.Difference and r.Reconciled from its rows and total.
func reconcile(r *ingest.Report) {
	var parcels int64
	var area float64
	for _, row := range r.Rows {
		parcels += row.Parcels
		area += row.AreaM2
	}
	r.Difference = area - r.Total.AreaM2
	if r.Method == ingest.MethodIntersection {
		r.Reconciled = relDiff(area, r.Total.AreaM2) <= ingest.IntersectionTolerance
	} else {
		r.Reconciled = parcels == r.Total.Parcels && areaEqual(area, r.Total.AreaM2)
	}
}

// unitCells reads the report per admin unit, with the units' outlines when
// shapes is set.
func unitCells(ctx context.Context, q *db.Queries, adminKey, version string, shapes bool) ([]ingest.UnitCell, error) {
	rows, err := q.ReportUnitCells(ctx, db.ReportUnitCellsParams{AdminKey: adminKey, PipelineVersion: version})
	if err != nil {
		return nil, ingest.Transientf("area report: units: %w", err)
	}
	out := make([]ingest.UnitCell, 0, len(rows))
	for _, r := range rows {
		out = append(out, ingest.UnitCell{UnitID: r.UnitID, AdminUnit: r.AdminUnit, UnitAreaM2: r.UnitAreaM2,
			PosParcels: r.PosParcels, PosAreaM2: r.PosAreaM2, IntParcels: r.IntParcels, IntAreaM2: r.IntAreaM2})
	}
	if !shapes {
		return out, nil
	}
	paths, err := q.ReportMapUnits(ctx, version)
	if err != nil {
		return nil, ingest.Transientf("area report: shapes: %w", err)
	}
	byID := map[int64]db.ReportMapUnitsRow{}
	for _, p := range paths {
		byID[p.UnitID] = p
	}
	for i := range out {
		if p, ok := byID[out[i].UnitID]; ok {
			out[i].Path, out[i].XMin, out[i].YMin, out[i].XMax, out[i].YMax = p.Path, p.Xmin, p.Ymin, p.Xmax, p.Ymax
		}
	}
	return out, nil
}

// NewestPipelineVersion returns the pipeline version that reports count by
// default, or "" when no source has a current generation.
func (s *Store) NewestPipelineVersion(ctx context.Context) (string, error) {
	v, err := s.q.NewestPipelineVersion(ctx)
	if err != nil {
		return "", ingest.Transientf("newest pipeline version: %w", err)
	}
	return v, nil
}
