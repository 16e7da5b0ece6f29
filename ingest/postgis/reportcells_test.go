package postgis

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
	"github.com/stretchr/testify/require"
)

// TestWriterReportCellsEqualSQL: the cells the writer computes as a
// parcel job streams (reportcells.go) are stored by the refresh instead
// of being computed, and they are geoingest_report_compute's: the same
// counts per unit and method, the same areas to within geodesic's
// tolerance per piece. The layer has every case of the SQL function:
// units of 257 vertices with wiggly shared borders, a unit overlapping
// others, parcels across borders and parcels outside every unit (a job
// half off the layer's extent). Then the fallbacks: cells computed
// against an admin generation that was replaced before the refresh are
// not used, nor are those of a store that computes none.
func TestWriterReportCellsEqualSQL(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	w, h := parcel.MaxLon-parcel.MinLon, parcel.MaxLat-parcel.MinLat
	admin, county, edge := writeEveryCaseLayers(t, dir)

	e.rpIngest(t, admin, "admin_units") // its refresh prepares the generation
	e.svc.NoReportRefresh = true
	e.rpIngest(t, county, "parcels")
	e.rpIngest(t, edge, "parcels")
	res, err := e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Assigned)
	require.Equal(t, 2, res.FromWriter, "both jobs' cells came from their writers")

	boundary, outside := compareStoredCells(t, e)
	require.Greater(t, boundary, int64(100), "parcels across unit borders")
	require.Positive(t, outside, "parcels with area outside every unit")

	// What the writer does not follow: a parcel the server repairs, and
	// features the server transforms from another CRS. Their cells are
	// computed in SQL.
	mid := func(fx, fy float64) (float64, float64) { return parcel.MinLon + fx*w, parcel.MinLat + fy*h }
	bx0, by0 := mid(0.33, 0.33)
	d := 0.002
	bowtie := fmt.Sprintf(`[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]`, bx0, by0, bx0+d, by0+d, bx0+d, by0, bx0, by0+d, bx0, by0)
	square := func(x, y float64) string {
		return fmt.Sprintf(`[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]`, x, y, x+d, y, x+d, y+d, x, y+d, x, y)
	}
	invalid := filepath.Join(dir, "invalid.geojson")
	require.NoError(t, os.WriteFile(invalid, []byte(`{"type":"FeatureCollection","features":[`+
		`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[`+bowtie+`]}},`+
		`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[`+square(bx0+2*d, by0)+`]}}]}`), 0o644))
	merc := func(lon, lat float64) (float64, float64) {
		const r = 6378137.0
		return r * lon * math.Pi / 180, r * math.Log(math.Tan(math.Pi/4+lat*math.Pi/360))
	}
	var feats []string
	for k := 0; k < 20; k++ {
		lx, ly := mid(0.2+0.03*float64(k), 0.45)
		ax, ay := merc(lx, ly)
		bx, by := merc(lx+d, ly+d)
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			ax, ay, bx, ay, bx, by, ax, by, ax, ay))
	}
	projected := filepath.Join(dir, "mercator.geojson")
	require.NoError(t, os.WriteFile(projected, []byte(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},"features":[`+
		strings.Join(feats, ",")+`]}`), 0o644))
	e.rpIngest(t, invalid, "parcels")
	e.rpIngest(t, projected, "parcels")
	res, err = e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Assigned)
	require.Zero(t, res.FromWriter, "a repaired parcel and transformed features: the refresh computes their cells")
	compareStoredCells(t, e)

	// A job written against one generation, refreshed after the admin
	// layer changed: its cells are for the old generation and are not
	// used; the new pair is computed in SQL.
	late := filepath.Join(dir, "late.geojson")
	writeBenchParcelsIn(t, late, 500, parcel.MinLon+w/3, parcel.MinLat+h/3)
	e.rpIngest(t, late, "parcels")
	admin2 := filepath.Join(dir, "admin2.geojson")
	writeBenchAdmin(t, admin2, 4)
	e.rpIngest(t, admin2, "admin_units")
	res, err = e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, res.Assigned, "every parcel job against the new generation")
	require.Zero(t, res.FromWriter, "no writer computed against the new generation")
	compareStoredCells(t, e)

	// The next job is computed by its writer against the new generation.
	more := filepath.Join(dir, "more.geojson")
	writeBenchParcelsIn(t, more, 800, parcel.MinLon+w/5, parcel.MinLat+h/5)
	e.rpIngest(t, more, "parcels")
	res, err = e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.FromWriter)
	compareStoredCells(t, e)

	// A store that computes no cells: the refresh computes them.
	e.store.NoClientReportCells = true
	last := filepath.Join(dir, "last.geojson")
	writeBenchParcelsIn(t, last, 300, parcel.MinLon+w/2, parcel.MinLat+h/6)
	e.rpIngest(t, last, "parcels")
	res, err = e.store.RefreshReports(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Assigned)
	require.Zero(t, res.FromWriter)
	requireClean(t, e)
}

// compareStoredCells compares the stored cells of every current parcel
// job with geoingest_report_compute's, and returns the parcels' pieces
// beyond one per parcel (boundary crossings) and the parcels with area
// outside every unit.
func compareStoredCells(t *testing.T, e *rpEnv) (boundary, outside int64) {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		WITH p AS (
		    SELECT s.current_job_id AS job, geoingest_admin_generation(s.pipeline_version) AS gen,
		           geoingest_admin_unit_ids(s.pipeline_version) AS ids
		    FROM sources s WHERE s.target_table = 'parcels' AND s.current_job_id IS NOT NULL
		), v AS (SELECT p.*, geoingest_overlapping_units(p.ids) AS ov FROM p)
		SELECT v.job, coalesce(a.unit_id, b.unit_id), coalesce(a.pos_parcels, -1), coalesce(b.pos_parcels, -1),
		       coalesce(a.pos_area_m2, -1), coalesce(b.pos_area_m2, -1),
		       coalesce(a.int_parcels, -1), coalesce(b.int_parcels, -1),
		       coalesce(a.int_area_m2, -1), coalesce(b.int_area_m2, -1)
		FROM v
		CROSS JOIN LATERAL (
		    SELECT a.unit_id, a.pos_parcels, a.pos_area_m2, a.int_parcels, a.int_area_m2, b.unit_id AS bu,
		           b.pos_parcels AS bp, b.pos_area_m2 AS bpa, b.int_parcels AS bi, b.int_area_m2 AS bia
		    FROM (SELECT c.* FROM report_assignment_cells c WHERE c.parcel_job_id = v.job AND c.admin_generation = v.gen) a
		    FULL JOIN (SELECT x.* FROM geoingest_report_compute(v.job, v.ids, v.ov) x) b ON b.unit_id = a.unit_id
		) x (unit_id, pos_parcels, pos_area_m2, int_parcels, int_area_m2, bu, bp, bpa, bi, bia)
		CROSS JOIN LATERAL (SELECT x.unit_id, x.pos_parcels, x.pos_area_m2, x.int_parcels, x.int_area_m2) a
		CROSS JOIN LATERAL (SELECT x.bu AS unit_id, x.bp AS pos_parcels, x.bpa AS pos_area_m2, x.bi AS int_parcels, x.bia AS int_area_m2) b
		ORDER BY 1, 2`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	perJob := map[string][2]int64{}
	for rows.Next() {
		var job string
		var unit, posA, posB, intA, intB int64
		var posAreaA, posAreaB, intAreaA, intAreaB float64
		require.NoError(t, rows.Scan(&job, &unit, &posA, &posB, &posAreaA, &posAreaB, &intA, &intB, &intAreaA, &intAreaB))
		require.Equal(t, posB, posA, "job %s unit %d: point-on-surface parcels (stored, computed)", job, unit)
		require.Equal(t, intB, intA, "job %s unit %d: intersecting parcels (stored, computed)", job, unit)
		require.InDelta(t, posAreaB, posAreaA, 1e-9*math.Abs(posAreaB)+1e-6, "job %s unit %d: point-on-surface area", job, unit)
		// Each piece's area is measured to within geodesic's tolerance of
		// PostGIS's.
		tol := geodesic.RelTolerance*math.Abs(intAreaB) + geodesic.AbsTolerance*float64(intB)
		require.InDelta(t, intAreaB, intAreaA, tol, "job %s unit %d: intersection area", job, unit)
		c := perJob[job]
		c[0] += posA
		c[1] += intA
		perJob[job] = c
		if unit == 0 {
			outside += intA
		}
		n++
	}
	require.NoError(t, rows.Err())
	require.Positive(t, n)
	for _, c := range perJob {
		boundary += c[1] - c[0]
	}
	return boundary, outside
}
