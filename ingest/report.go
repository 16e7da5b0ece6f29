package ingest

import (
	"fmt"
	"time"
	"unicode"
)

// Report methods: how parcels are attributed to admin units.
const (
	// MethodPointOnSurface assigns each whole parcel to the admin unit
	// that contains its ST_PointOnSurface; a point on a boundary shared by
	// several units goes to the one with the lowest id (admin_units.id),
	// so every parcel counts exactly once.
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
	// Unassigned marks the UnassignedUnit row.
	Unassigned bool `json:"unassigned,omitempty"`
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
	// Shapes asks for each admin unit's outline (Report.Units), for the
	// map.
	Shapes bool
	// AsOf, when set, asks for the report as it was at that time, from
	// the history (docs/reports.md, "As of a time"): computed from the
	// parcels and admin units of that time, with the ledger's total of
	// the parcel jobs current then, and no admin check or map.
	AsOf time.Time
}

// validAdminKey bounds what an admin key may be: a property name, not
// free text: 1 to 63 characters, letters, digits, _ . : - and spaces, the
// first a letter, a digit or _. (It is a query parameter either way; this
// only catches typos such as a stray quote early.) Written out rather than
// as a regexp: compiling one with Unicode classes costs every process
// some 15 ms at start.
func validAdminKey(k string) bool {
	n := 0
	for _, r := range k {
		ok := unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_'
		if n > 0 {
			ok = ok || r == ' ' || r == '.' || r == ':' || r == '-'
		}
		if !ok {
			return false
		}
		n++
	}
	return n >= 1 && n <= 63
}

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
	if !validAdminKey(q.AdminKey) {
		return Permanentf("admin key %q: want a property name (letters, digits, _ . : - and spaces, at most 63)", q.AdminKey)
	}
	if !q.AsOf.IsZero() && q.Shapes {
		return Permanentf("a report as of a time has no map")
	}
	return nil
}

// UnassignedUnit is the name of the report row of what lies in no admin
// unit: the parcels whose point on surface is in no unit
// (point-on-surface), or the parcel area outside every unit
// (intersection).
const UnassignedUnit = "(unassigned)"

// Report is the admin-unit area report of one pipeline version, read from
// one snapshot of the database.
type Report struct {
	Method          string    `json:"method"`
	AdminKey        string    `json:"admin_key"`
	PipelineVersion string    `json:"pipeline_version"`
	GeneratedAt     time.Time `json:"generated_at"`
	// Rows are the admin units by key value, ordered by it, then the
	// UnassignedUnit row when it is not empty (its Unassigned is true).
	Rows []AreaRow `json:"rows"`
	// Unassigned is what lies in no unit (zero when nothing does).
	Unassigned AreaRow `json:"unassigned"`
	// Total is every current parcel of the version, as the ledger records
	// them (feature counts and SUM(ST_Area(geom::geography)) at write time;
	// `geoingest verify` checks both against the rows).
	Total AreaRow `json:"total"`
	// Difference is the rows' area minus Total's, in m². Reconciled is
	// true when the rows add up to Total: for point-on-surface the same
	// number of parcels and the area within AreaTolerance; for
	// intersection the area within IntersectionTolerance (parcels met by
	// several units count in each). Overlapping admin units make an
	// intersection report add up to more than Total.
	Difference float64 `json:"difference_m2"`
	Reconciled bool    `json:"reconciled"`
	// Check is the admin layer's check (see AdminCheck), shown with every
	// report.
	Check *AdminCheck `json:"admin_check"`
	// Units are the report per admin unit (not per key value), ordered by
	// unit id, for the map.
	Units []UnitCell `json:"-"`
	// AsOf is the time the report is of (AreaQuery.AsOf), nil for now.
	AsOf *time.Time `json:"as_of,omitempty"`
}

// IntersectionTolerance is the relative tolerance within which the rows of
// an intersection report must add up to the parcels' area: the pieces of a
// parcel cut by unit boundaries add up to its area only to the precision
// of ST_Intersection (about 1e-8 relative on the synthetic set).
const IntersectionTolerance = 1e-6

// UnitCell is the report of one admin unit (UnitID 0: in no unit).
type UnitCell struct {
	UnitID    int64
	AdminUnit string
	// UnitAreaM2 is the unit's own area on the spheroid.
	UnitAreaM2 float64
	// PosParcels and PosAreaM2: the parcels assigned by point on surface,
	// and their area. IntParcels and IntAreaM2: the parcels with area in
	// the unit, and that area.
	PosParcels int64
	PosAreaM2  float64
	IntParcels int64
	IntAreaM2  float64
	// Path is the unit's outline as SVG path data (ST_AsSVG: x is
	// longitude, y is -latitude), with its bounding box; only when the
	// query asked for shapes.
	Path                   string
	XMin, YMin, XMax, YMax float64
}

func (r AreaRow) String() string {
	return fmt.Sprintf("%s: %d parcels, %.1f m²", r.AdminUnit, r.Parcels, r.AreaM2)
}
