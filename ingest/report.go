package ingest

import (
	"context"
	"fmt"
	"regexp"

	"github.com/geoingest/geoingest/ingest/internal/db"
	"github.com/jackc/pgx/v5/pgtype"
)

// Report methods: how parcels are attributed to admin units.
const (
	// MethodPointOnSurface assigns each whole parcel to the admin unit
	// that contains its ST_PointOnSurface.
	MethodPointOnSurface = "point-on-surface"
	// MethodIntersection splits parcels by admin unit with ST_Intersection.
	MethodIntersection = "intersection"
)

// Methods are the report methods, default first.
var Methods = []string{MethodPointOnSurface, MethodIntersection}

// AreaRow is one admin unit of the area report.
type AreaRow struct {
	// AdminUnit is the value of the admin-key property of the unit ("" when
	// the unit has none). Units that share a value are summed together.
	AdminUnit string `json:"admin_unit"`
	// Parcels is the number of parcels assigned to the unit
	// (point-on-surface) or overlapping it (intersection).
	Parcels int64 `json:"parcels"`
	// AreaM2 is their area on the spheroid in square metres, AreaHa the
	// same in hectares.
	AreaM2 float64 `json:"area_m2"`
	AreaHa float64 `json:"area_ha"`
}

// AreaQuery selects the report.
type AreaQuery struct {
	// Method is MethodPointOnSurface (default when empty) or
	// MethodIntersection.
	Method string
	// AdminKey is the property of the admin units that names them
	// (default "name"). It is passed to SQL as a value.
	AdminKey string
	// PipelineVersion selects the generations counted; "" means the newest
	// (see geoingest_newest_pipeline_version in migration 0002).
	PipelineVersion string
}

// adminKeyRE bounds what an admin key may be: a property name, not free
// text. (It is a query parameter either way; this only catches typos such
// as a stray quote early.)
var adminKeyRE = regexp.MustCompile(`^[\p{L}\p{N}_][\p{L}\p{N}_ .:-]{0,62}$`)

// Validate fills in defaults and checks the query. Returns a Permanent
// error naming the bad field.
func (q *AreaQuery) Validate() error {
	if q.Method == "" {
		q.Method = MethodPointOnSurface
	}
	if q.Method != MethodPointOnSurface && q.Method != MethodIntersection {
		return Permanentf("report method %q: want %s or %s", q.Method, MethodPointOnSurface, MethodIntersection)
	}
	if q.AdminKey == "" {
		q.AdminKey = "name"
	}
	if !adminKeyRE.MatchString(q.AdminKey) {
		return Permanentf("admin key %q: want a property name (letters, digits, _ . : - and spaces, at most 63)", q.AdminKey)
	}
	return nil
}

// AreaReport runs the admin-unit area report (migration 0002's
// geoingest_area_by_point_on_surface or geoingest_area_by_intersection),
// counting only current generations of the chosen pipeline version for
// both parcels and admin units. Rows come back ordered by admin unit.
// Returns a Permanent error for an invalid query, a Transient one when the
// database fails.
func (s *Store) AreaReport(ctx context.Context, q AreaQuery) ([]AreaRow, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	version := pgtype.Text{String: q.PipelineVersion, Valid: q.PipelineVersion != ""}
	var out []AreaRow
	switch q.Method {
	case MethodIntersection:
		rows, err := s.q.AreaByIntersection(ctx, db.AreaByIntersectionParams{AdminKey: q.AdminKey, PipelineVersion: version})
		if err != nil {
			return nil, Transientf("area report: %w", err)
		}
		for _, r := range rows {
			out = append(out, AreaRow(r))
		}
	default:
		rows, err := s.q.AreaByPointOnSurface(ctx, db.AreaByPointOnSurfaceParams{AdminKey: q.AdminKey, PipelineVersion: version})
		if err != nil {
			return nil, Transientf("area report: %w", err)
		}
		for _, r := range rows {
			out = append(out, AreaRow(r))
		}
	}
	return out, nil
}

// NewestPipelineVersion returns the pipeline version that reports count by
// default, or "" when no source has a current generation.
func (s *Store) NewestPipelineVersion(ctx context.Context) (string, error) {
	v, err := s.q.NewestPipelineVersion(ctx)
	if err != nil {
		return "", Transientf("newest pipeline version: %w", err)
	}
	return v, nil
}

func (r AreaRow) String() string {
	return fmt.Sprintf("%s: %d parcels, %.1f m²", r.AdminUnit, r.Parcels, r.AreaM2)
}
