package postgis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// Hand-made layers in EPSG:4326 on a grid of 1/512 degree (about 140 m
// by 110 m) from (13, 52): coordinates exact in binary, so that
// ST_PointOnSurface of the straddling parcel is exactly on the shared
// boundary (GEOS takes the middle of the widest interval of the
// horizontal bisector), and parcels small enough that the geodesic edges
// of their pieces add up to their own area (as for real parcels).

// gx and gy are the longitude and latitude of grid coordinates.
func gx(x float64) float64 { return 13 + x/512 }
func gy(y float64) float64 { return 52 + y/512 }

// box is a GeoJSON polygon for the grid rectangle [x0,x1] x [y0,y1].
func box(x0, y0, x1, y1 float64) string {
	a, b, c, d := gx(x0), gy(y0), gx(x1), gy(y1)
	return fmt.Sprintf(`{"type":"Polygon","coordinates":[[[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g]]]}`,
		a, b, c, b, c, d, a, d, a, b)
}

// writeLayer writes a FeatureCollection of (name, geometry) features.
func writeLayer(t *testing.T, dir, file string, features ...[2]string) string {
	t.Helper()
	var fs []string
	for _, f := range features {
		fs = append(fs, fmt.Sprintf(`{"type":"Feature","properties":{"name":%q},"geometry":%s}`, f[0], f[1]))
	}
	path := filepath.Join(dir, file)
	require.NoError(t, os.WriteFile(path,
		[]byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",\n")+"]}"), 0o644))
	return path
}

// handParcels are four parcels: inside West; across the West/East
// boundary with its point on surface exactly on it; outside every unit;
// half outside East (its point on East's outer edge).
func handParcels(t *testing.T, dir string) string {
	return writeLayer(t, dir, "parcels.geojson",
		[2]string{"inside", box(1, 1, 2, 2)},
		[2]string{"straddle", box(2, 1, 6, 2)},
		[2]string{"outside", box(10, 0, 12, 1)},
		[2]string{"half-out", box(7, 2, 9, 3)},
	)
}

// currentParcelArea is SUM(ST_Area(geom::geography)) of the current
// parcels, computed here independently of the report.
func currentParcelArea(t *testing.T, e *rpEnv) (int64, float64) {
	t.Helper()
	var n int64
	var area float64
	require.NoError(t, e.pool.QueryRow(context.Background(),
		`SELECT count(*), sum(ST_Area(geom::geography)) FROM geoingest_current_parcels`).Scan(&n, &area))
	return n, area
}

func rowsByUnit(r *ingest.Report) map[string]ingest.AreaRow {
	m := map[string]ingest.AreaRow{}
	for _, row := range r.Rows {
		m[row.AdminUnit] = row
	}
	return m
}

// requireSameWithoutAssignments deletes the report assignments and
// requires both reports to come out the same when computed on the fly,
// then refreshes them again.
func requireSameWithoutAssignments(t *testing.T, e *rpEnv, q ingest.AreaQuery, want *ingest.Report) {
	t.Helper()
	ctx := context.Background()
	e.exec(t, `DELETE FROM report_assignments`)
	got, err := e.store.AreaReport(ctx, q)
	require.NoError(t, err)
	requireSameAreaRows(t, want.Rows, got.Rows)
	r, err := e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Assigned)
}

func TestReportHandMadeLayerCountsEveryParcelOnce(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	// West is written first: it has the lower id.
	admin := writeLayer(t, dir, "admin.geojson",
		[2]string{"West", box(0, 0, 4, 4)},
		[2]string{"East", box(4, 0, 8, 4)},
	)
	e.rpIngest(t, handParcels(t, dir), "parcels")
	e.rpIngest(t, admin, "admin_units")
	n, total := currentParcelArea(t, e)
	require.EqualValues(t, 4, n)

	pos, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodPointOnSurface})
	require.NoError(t, err)
	by := rowsByUnit(pos)
	require.Len(t, pos.Rows, 3, "East, West, (unassigned): %+v", pos.Rows)
	require.Equal(t, ingest.UnassignedUnit, pos.Rows[2].AdminUnit, "the unassigned row comes last")
	require.True(t, pos.Rows[2].Unassigned)
	// The straddling parcel's point is on the shared boundary: it goes to
	// West (the lower id) and only there; half-out's point is on East's
	// outer edge: East.
	require.EqualValues(t, 2, by["West"].Parcels, "inside + straddle")
	require.EqualValues(t, 1, by["East"].Parcels, "half-out")
	require.EqualValues(t, 1, by[ingest.UnassignedUnit].Parcels, "outside")
	require.Equal(t, pos.Unassigned.Parcels, by[ingest.UnassignedUnit].Parcels)
	// Every parcel once: the rows add up to the current parcels.
	require.EqualValues(t, 4, pos.Total.Parcels)
	require.InEpsilon(t, total, pos.Total.AreaM2, 1e-6, "total vs SUM(ST_Area(geom::geography))")
	var sum float64
	for _, r := range pos.Rows {
		sum += r.AreaM2
	}
	require.InEpsilon(t, total, sum, 1e-6, "rows vs SUM(ST_Area(geom::geography))")
	require.True(t, pos.Reconciled)
	// No overlap, no duplicate key; the parcels outside make a gap.
	require.Empty(t, pos.Check.DuplicateKeys)
	require.Empty(t, pos.Check.Overlaps)
	require.EqualValues(t, 1, pos.Check.Gaps.Parcels)
	require.EqualValues(t, 2, pos.Check.Gaps.OutsideParcels, "outside, and half of half-out")
	require.False(t, pos.Check.OK)
	require.Len(t, pos.Check.Problems, 1)
	require.Contains(t, pos.Check.Problems[0], "coverage gap")

	inter, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodIntersection})
	require.NoError(t, err)
	ib := rowsByUnit(inter)
	require.EqualValues(t, 2, ib["West"].Parcels, "inside, straddle")
	require.EqualValues(t, 2, ib["East"].Parcels, "straddle, half-out")
	require.EqualValues(t, 2, ib[ingest.UnassignedUnit].Parcels, "outside, half-out")
	var outside, halfOut float64
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT ST_Area(geom::geography) FROM parcels WHERE properties->>'name' = 'outside'`).Scan(&outside))
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT ST_Area(ST_Difference(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))::geography)
		FROM parcels WHERE properties->>'name' = 'half-out'`, gx(0), gy(0), gx(8), gy(4)).Scan(&halfOut))
	require.InEpsilon(t, outside+halfOut, ib[ingest.UnassignedUnit].AreaM2, 1e-9, "area outside every unit")
	require.True(t, inter.Reconciled, "difference %g", inter.Difference)
	require.InEpsilon(t, total, inter.Total.AreaM2, 1e-6)

	// The same numbers when nothing is assigned (computed on the fly).
	requireSameWithoutAssignments(t, e, ingest.AreaQuery{Method: ingest.MethodPointOnSurface}, pos)
	requireSameWithoutAssignments(t, e, ingest.AreaQuery{Method: ingest.MethodIntersection}, inter)
	requireClean(t, e)
}

func TestReportHandMadeBrokenAdminLayer(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	// Two units named "A" side by side, and "B" over the middle of both.
	admin := writeLayer(t, dir, "admin.geojson",
		[2]string{"A", box(0, 0, 4, 4)},
		[2]string{"A", box(4, 0, 8, 4)},
		[2]string{"B", box(2, 0, 6, 2)},
	)
	parcels := writeLayer(t, dir, "parcels.geojson",
		// Inside the first A and inside B: covered by two units.
		[2]string{"in-overlap", box(3, 0.5, 3.5, 1)},
		// Inside the first A only.
		[2]string{"in-a", box(0.5, 3, 1, 3.5)},
	)
	e.rpIngest(t, parcels, "parcels")
	e.rpIngest(t, admin, "admin_units")
	var ids []int64
	rows, err := e.pool.Query(ctx, `SELECT id FROM admin_units ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 3)

	c, err := e.store.CheckAdmin(ctx, "name", "")
	require.NoError(t, err)
	require.False(t, c.OK)
	require.Equal(t, 3, c.Units)
	require.Equal(t, []ingest.DuplicateKey{{AdminUnit: "A", UnitIDs: ids[:2]}}, c.DuplicateKeys)
	require.Len(t, c.Overlaps, 2, "B overlaps both A units: %+v", c.Overlaps)
	var quarter float64 // the overlap of each A with B: 2 x 2 grid cells
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT ST_Area(ST_MakeEnvelope($1, $2, $3, $4, 4326)::geography)`, gx(2), gy(0), gx(4), gy(2)).Scan(&quarter))
	for i, o := range c.Overlaps {
		require.Equal(t, ids[i], o.UnitA)
		require.Equal(t, ids[2], o.UnitB)
		require.Equal(t, "B", o.AdminUnitB)
		require.InEpsilon(t, quarter, o.AreaM2, 1e-3, "overlap %d", i)
	}
	require.Zero(t, c.Gaps.Parcels)
	require.Len(t, c.Problems, 3, "%v", c.Problems)
	require.Contains(t, c.Problems[0], `duplicate key: 2 admin units`)
	require.Contains(t, c.Problems[1], "overlap")

	// The report says so too, and still counts every parcel once: the
	// parcel under A and B goes to the lowest id (the first A).
	pos, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.Equal(t, c.Problems, pos.Check.Problems)
	by := rowsByUnit(pos)
	require.EqualValues(t, 2, by["A"].Parcels)
	require.Zero(t, by["B"].Parcels)
	require.True(t, pos.Reconciled)
	// Intersection counts the overlap twice: it does not add up.
	inter, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodIntersection})
	require.NoError(t, err)
	ib := rowsByUnit(inter)
	require.EqualValues(t, 2, ib["A"].Parcels)
	require.EqualValues(t, 1, ib["B"].Parcels)
	require.False(t, inter.Reconciled)
	require.Greater(t, inter.Difference, 0.0)
	requireSameWithoutAssignments(t, e, ingest.AreaQuery{}, pos)
	requireSameWithoutAssignments(t, e, ingest.AreaQuery{Method: ingest.MethodIntersection}, inter)

	b, err := json.Marshal(pos)
	require.NoError(t, err)
	require.Contains(t, string(b), `"admin_check":{`)
	require.Contains(t, string(b), `"duplicate_keys":[{"admin_unit":"A"`)
}

// TestReportAssignmentsFollowGenerations replaces the admin layer and the
// parcels and deletes a source: the reports follow at once (never mixing
// generations), the refresh after each job assigns the new pairs and
// prunes the old ones, and verify checks the assignments.
func TestReportAssignmentsFollowGenerations(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.geojson")
	writeLayer(t, dir, "admin.geojson", [2]string{"West", box(0, 0, 4, 4)})
	e.rpIngest(t, handParcels(t, dir), "parcels")
	e.rpIngest(t, admin, "admin_units")
	requireClean(t, e)
	var n int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM report_assignments`).Scan(&n))
	require.Equal(t, 1, n, "one assignment: the parcels to the current admin layer")
	r, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 2, rowsByUnit(r)["West"].Parcels)
	require.EqualValues(t, 2, r.Unassigned.Parcels)

	// A new version of the admin layer adds East: a new generation.
	writeLayer(t, dir, "admin.geojson",
		[2]string{"West", box(0, 0, 4, 4)},
		[2]string{"East", box(4, 0, 8, 4)})
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(admin, later, later))
	e.rpIngest(t, admin, "admin_units")
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM report_assignments`).Scan(&n))
	require.Equal(t, 1, n, "the assignment to the old generation is pruned")
	var gens []string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT coalesce(array_agg(admin_generation), '{}') FROM report_admin_generations
		WHERE admin_generation = geoingest_admin_generation(pipeline_version)`).Scan(&gens))
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM report_admin_generations`).Scan(&n))
	require.Equal(t, []int{1, 1}, []int{len(gens), n}, "only the current admin generation stays prepared")
	r, err = e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 1, rowsByUnit(r)["East"].Parcels)
	require.EqualValues(t, 1, r.Unassigned.Parcels)
	requireClean(t, e)

	// Tampered cells are what the report reads, and verify catches them.
	e.exec(t, `UPDATE report_assignment_cells SET pos_area_m2 = pos_area_m2 * 2 WHERE unit_id <> 0`)
	bad, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.False(t, bad.Reconciled)
	var parcelsJob string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT job_id FROM jobs WHERE target_table = 'parcels'`).Scan(&parcelsJob))
	requireNames(t, e, parcelsJob, "report assignment")
	// A missing assignment is pending, not a problem: the report is
	// exact without it.
	e.exec(t, `DELETE FROM report_assignments`)
	requirePending(t, e, parcelsJob)
	again, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.True(t, again.Reconciled)
	require.Equal(t, r.Rows, again.Rows)
	res, err := e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Assigned)
	require.EqualValues(t, 4, res.Parcels)
	res, err = e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Assigned, "a second refresh has nothing to do")
	requireClean(t, e)
}

// TestMigration0006DownAndUp undoes migration 0006 on a database with data
// (the reports go back to 0002's, which still answer) and applies it again
// in place: the reports are the same, computed on the fly until the next
// refresh.
func TestMigration0006DownAndUp(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	e.rpIngest(t, rpBristolMSOA, "parcels")
	e.rpIngest(t, rpBristolBoundary, "admin_units")
	before, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	down, err := os.ReadFile("../../migrations/0006_report_assignments.down.sql")
	require.NoError(t, err)
	up, err := os.ReadFile("../../migrations/0006_report_assignments.up.sql")
	require.NoError(t, err)
	e.exec(t, string(down))
	var n int64
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT sum(parcels) FROM geoingest_area_by_point_on_surface('name', NULL)`).Scan(&n))
	require.EqualValues(t, 72, n, "migration 0002's report")
	e.exec(t, string(up))
	// Migrations 0012 and 0015 replaced 0006's geoingest_report_compute
	// (the same cells, summed in another order): apply them again too, so
	// that the report is computed by the function that computed it before.
	for _, m := range []string{"0012_year", "0015_report_refresh"} {
		later, err := os.ReadFile("../../migrations/" + m + ".up.sql")
		require.NoError(t, err)
		e.exec(t, string(later))
	}
	after, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	requireSameAreaRows(t, before.Rows, after.Rows)
	var job string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT job_id FROM jobs WHERE target_table = 'parcels'`).Scan(&job))
	requirePending(t, e, job)
	res, err := e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Assigned)
	requireClean(t, e)
}

// requireSameAreaRows: the same units, parcel counts and flags, and the
// same areas up to the last bits of a float sum (relative 1e-12): a sum of
// the same cells in another order, as a scan's order can change from one
// plan to the next, differs there (CI saw 1.0968441078876561e+08 against
// ...564e+08). Reports computed two ways are compared with it.
func requireSameAreaRows(t *testing.T, want, got []ingest.AreaRow) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.InDelta(t, w.AreaM2, g.AreaM2, 1e-12*math.Abs(w.AreaM2), "row %d (%s): area", i, w.AdminUnit)
		require.InDelta(t, w.AreaHa, g.AreaHa, 1e-12*math.Abs(w.AreaHa), "row %d (%s): hectares", i, w.AdminUnit)
		w.AreaM2, w.AreaHa, g.AreaM2, g.AreaHa = 0, 0, 0, 0
		require.Equal(t, w, g, "row %d", i)
	}
}
