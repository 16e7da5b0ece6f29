package postgis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
	"github.com/stretchr/testify/require"
)

// TestReportComputeSameCellsAsMigration0012: migration 0015's
// geoingest_report_compute (units by their box, boundary parcels against
// clips of the units, the union of all units) computes the cells that
// 0012's computed, on a layer that has every case: units of 257 vertices
// with wiggly shared borders, a unit overlapping others, parcels across
// borders and parcels outside every unit (a job half off the layer's
// extent). Both with the admin generation prepared and without it (the
// function's own fallbacks, as right after the upgrade).
func TestReportComputeSameCellsAsMigration0012(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	admin, county, edge := writeEveryCaseLayers(t, t.TempDir())
	e.rpIngest(t, admin, "admin_units")
	e.rpIngest(t, county, "parcels")
	e.rpIngest(t, edge, "parcels")

	// 0012's function, as that migration wrote it, under another name.
	m, err := os.ReadFile("../../migrations/0012_year.up.sql")
	require.NoError(t, err)
	src := string(m)
	start := strings.Index(src, "CREATE OR REPLACE FUNCTION geoingest_report_compute(")
	require.GreaterOrEqual(t, start, 0)
	end := strings.Index(src[start:], "\n$$;") + len("\n$$;")
	e.exec(t, strings.Replace(src[start:start+end], "geoingest_report_compute(", "report_compute_0012(", 1))

	var prepared int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM report_admin_generations WHERE cardinality(overlapping_units) > 0
		AND coverage IS NOT NULL`).Scan(&prepared))
	require.Equal(t, 1, prepared, "the admin generation is prepared, with overlapping units")
	rows, err := e.pool.Query(ctx, `SELECT current_job_id FROM sources WHERE target_table = 'parcels' ORDER BY 1`)
	require.NoError(t, err)
	var jobs []string
	for rows.Next() {
		var j string
		require.NoError(t, rows.Scan(&j))
		jobs = append(jobs, j)
	}
	require.NoError(t, rows.Err())
	require.Len(t, jobs, 2)

	compare := func(label string) (boundary, outside int64) {
		for _, job := range jobs {
			rows, err := e.pool.Query(ctx, `
				WITH u AS (SELECT geoingest_admin_unit_ids(s.pipeline_version) AS ids FROM sources s WHERE s.current_job_id = $1),
				     v AS (SELECT u.ids, geoingest_overlapping_units(u.ids) AS ov FROM u)
				SELECT coalesce(a.unit_id, b.unit_id), coalesce(a.pos_parcels, -1), coalesce(b.pos_parcels, -1),
				       coalesce(a.pos_area_m2, -1), coalesce(b.pos_area_m2, -1),
				       coalesce(a.int_parcels, -1), coalesce(b.int_parcels, -1),
				       coalesce(a.int_area_m2, -1), coalesce(b.int_area_m2, -1)
				FROM (SELECT x.* FROM v, report_compute_0012($1, v.ids, v.ov) x) a
				FULL JOIN (SELECT x.* FROM v, geoingest_report_compute($1, v.ids, v.ov) x) b ON b.unit_id = a.unit_id`, job)
			require.NoError(t, err)
			n := 0
			var parcels, pieces int64
			for rows.Next() {
				var unit, posA, posB, intA, intB int64
				var posAreaA, posAreaB, intAreaA, intAreaB float64
				require.NoError(t, rows.Scan(&unit, &posA, &posB, &posAreaA, &posAreaB, &intA, &intB, &intAreaA, &intAreaB))
				require.Equal(t, posA, posB, "%s: job %s unit %d: point-on-surface parcels", label, job, unit)
				require.Equal(t, intA, intB, "%s: job %s unit %d: intersecting parcels", label, job, unit)
				require.InDelta(t, posAreaA, posAreaB, 1e-9*posAreaA, "%s: job %s unit %d: point-on-surface area", label, job, unit)
				require.InDelta(t, intAreaA, intAreaB, 1e-9*intAreaA, "%s: job %s unit %d: intersection area", label, job, unit)
				parcels += posA
				pieces += intA
				if unit == 0 {
					outside += intA
				}
				n++
			}
			require.NoError(t, rows.Err())
			require.Positive(t, n)
			boundary += pieces - parcels
		}
		return boundary, outside
	}
	boundary, outside := compare("prepared")
	require.Greater(t, boundary, int64(100), "parcels across unit borders")
	require.Positive(t, outside, "parcels with area outside every unit")
	e.exec(t, `DELETE FROM report_admin_generations`)
	compare("not prepared")
	requireClean(t, e)
}

// writeEveryCaseLayers writes, into dir, a layer with every case of the
// report cells: admin units of 257 vertices with wiggly shared borders
// and a unit overlapping others (admin), 3,000 parcels across borders
// (county), and 1,000 parcels half off the units' extent (edge).
func writeEveryCaseLayers(t testing.TB, dir string) (admin, county, edge string) {
	w, h := parcel.MaxLon-parcel.MinLon, parcel.MaxLat-parcel.MinLat
	x0, y0, x1, y1 := parcel.MinLon+0.42*w, parcel.MinLat+0.42*h, parcel.MinLon+0.5*w, parcel.MinLat+0.5*h
	over := parcel.Admin{ID: 999, Name: "Overlay", Ring: parcel.Ring{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}}}
	admin = filepath.Join(dir, "admin.geojson")
	writeBenchAdmin(t, admin, 6, over)
	county = filepath.Join(dir, "county.geojson")
	writeBenchCounty(t, county, 3000)
	edge = filepath.Join(dir, "edge.geojson")
	writeBenchParcelsIn(t, edge, 1000, parcel.MaxLon-w/8, parcel.MinLat+h/2)
	return admin, county, edge
}
