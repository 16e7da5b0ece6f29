package postgis

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReportCellsFollowTheChanges: a version that changes one parcel gets
// its report cells from its base's and its change record (migration
// 0041), not by counting every parcel again: the writer counts none, the
// refresh counts the changed parcel's old and new rows, every unit that
// parcel does not meet keeps its base's cells bit for bit, and the cells
// equal geoingest_report_compute's of the whole version. Then a version
// that adds, removes and edits attributes, and one of the parcels across
// a unit border: the same. verify stays clean (the cells reconcile with
// the ledger).
func TestReportCellsFollowTheChanges(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	admin, county, _ := writeEveryCaseLayers(t, t.TempDir())
	e.rpIngest(t, admin, "admin_units")
	first := e.rpIngest(t, county, "parcels") // its cells from its writer
	e.svc.NoReportRefresh = true

	// A parcel across a unit border (the pieces and the area in no unit
	// are exercised, not only a covered parcel).
	var border int64
	require.NoError(t, e.pool.QueryRow(ctx, `
		SELECT p.feature_index FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref JOIN admin_units a ON a.geom && p.geom
		WHERE j.job_id = $1 AND ST_Intersects(a.geom, p.geom) AND NOT ST_Covers(a.geom, p.geom)
		ORDER BY p.feature_index LIMIT 1`, first.JobID).Scan(&border))

	lines := readFeatureLines(t, county)
	version := func(edit func(lines []string) []string) (job, base string) {
		t.Helper()
		writeFeatureLines(t, county, edit(append([]string(nil), lines...)))
		r := e.rpIngest(t, county, "parcels")
		require.NotEmpty(t, r.Replaced)
		return r.JobID, r.Replaced
	}
	cellsOf := func(job string) map[int64][4]float64 {
		t.Helper()
		rows, err := e.pool.Query(ctx, `SELECT c.unit_id, c.pos_parcels, c.pos_area_m2, c.int_parcels, c.int_area_m2
			FROM report_assignment_cells c WHERE c.parcel_job_id = $1`, job)
		require.NoError(t, err)
		defer rows.Close()
		out := map[int64][4]float64{}
		for rows.Next() {
			var u, pn, in int64
			var pa, ia float64
			require.NoError(t, rows.Scan(&u, &pn, &pa, &in, &ia))
			out[u] = [4]float64{float64(pn), pa, float64(in), ia}
		}
		require.NoError(t, rows.Err())
		return out
	}
	refresh := func(job, base string, wantChanges int) {
		t.Helper()
		res, err := e.store.RefreshParcelJob(ctx, job, base)
		require.NoError(t, err)
		require.Equal(t, 1, res.Assigned)
		require.Zero(t, res.FromWriter, "the writer counted no parcel of a version whose base has cells")
		require.Equal(t, wantChanges, res.FromChanges)
		compareStoredCells(t, e)
		requireClean(t, e)
	}

	// 1. One parcel's geometry changed (moved a little).
	job, base := version(func(ls []string) []string {
		ls[border] = editFeature(t, ls[border], func(f map[string]any) { shiftGeometry(f, 2e-5) })
		return ls
	})
	before := cellsOf(base)
	var touched []int64
	rows, err := e.pool.Query(ctx, `
		SELECT DISTINCT a.id FROM feature_changes fc JOIN admin_units a
		  ON a.geom && fc.old_bbox::geometry OR a.geom && fc.new_bbox::geometry
		WHERE fc.job_id = $1 AND a.id = ANY (geoingest_admin_unit_ids((SELECT pipeline_version FROM jobs WHERE job_id = $1)))`, job)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		touched = append(touched, id)
	}
	require.NoError(t, rows.Err())
	var kinds []string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT array_agg(kind) FROM feature_changes WHERE job_id = $1`, job).Scan(&kinds))
	require.Equal(t, []string{"geometry"}, kinds, "one parcel changed")
	refresh(job, base, 1)
	after := cellsOf(job)
	require.NotEmpty(t, touched)
	untouched := 0
	for u, c := range before {
		if u == 0 || containsID(touched, u) {
			continue
		}
		require.Equal(t, c, after[u], "unit %d, which the changed parcel does not meet: its base's cells, untouched", u)
		untouched++
	}
	require.Positive(t, untouched)
	var diff int
	for u, c := range after {
		if before[u] != c {
			diff++
			require.True(t, u == 0 || containsID(touched, u), "unit %d changed, but the parcel does not meet it", u)
		}
	}
	require.Positive(t, diff, "the changed parcel's units changed")

	// 2. A parcel added, one removed, one with new attributes, the border
	// parcel moved again: the attribute change moves no cell.
	lines = readFeatureLines(t, county)
	job, base = version(func(ls []string) []string {
		ls[border] = editFeature(t, ls[border], func(f map[string]any) { shiftGeometry(f, -3e-5) })
		ls[7] = editFeature(t, ls[7], func(f map[string]any) {
			f["properties"].(map[string]any)["owner"] = "someone else"
		})
		added := editFeature(t, ls[11], func(f map[string]any) { shiftGeometry(f, 0.5) })
		return append(append(ls[:20:20], ls[21:]...), added)
	})
	refresh(job, base, 1)

	// 3. A version that changes more parcels than it has is counted whole
	// (its changes would cost more than the version).
	lines = readFeatureLines(t, county)
	job, base = version(func(ls []string) []string {
		for i := range ls {
			ls[i] = editFeature(t, ls[i], func(f map[string]any) { shiftGeometry(f, 1e-6) })
		}
		return ls
	})
	refresh(job, base, 0)
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// readFeatureLines returns the features of a file written by
// benchWriteFeatures, one per line.
func readFeatureLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), `{"type":"FeatureCollection","features":[`)
	s = strings.TrimSuffix(s, "]}")
	return strings.Split(s, ",\n")
}

func writeFeatureLines(t testing.TB, path string, lines []string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(lines, ",\n")+"]}\n"), 0o644))
}

func editFeature(t testing.TB, line string, edit func(map[string]any)) string {
	t.Helper()
	var f map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &f))
	edit(f)
	b, err := json.Marshal(f)
	require.NoError(t, err)
	return string(b)
}

// shiftGeometry moves every coordinate of a feature's geometry east by dx.
func shiftGeometry(f map[string]any, dx float64) {
	var walk func(v any)
	walk = func(v any) {
		a, ok := v.([]any)
		if !ok {
			return
		}
		if len(a) >= 2 {
			if x, ok := a[0].(float64); ok {
				a[0] = x + dx
				return
			}
		}
		for _, e := range a {
			walk(e)
		}
	}
	walk(f["geometry"].(map[string]any)["coordinates"])
}
