package postgis

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestAreaReportAsOf: the area report as of a time (migration 0042)
// equals the report that was made at that time, by both methods, after
// the parcels changed (moved, removed, added) and the admin layer was
// replaced by one whose units are named otherwise: the same rows, the
// same counts, the areas to within the report's tolerances, the same
// ledger total and difference from it (point on surface reconciles;
// intersection counts the overlay unit's overlap twice). A time before the first version has no
// parcels; the report as of now equals the current one.
func TestAreaReportAsOf(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	admin, county, edge := writeEveryCaseLayers(t, dir)
	before := dbNow(t, e)
	e.rpIngest(t, admin, "admin_units")
	e.rpIngest(t, county, "parcels")
	e.rpIngest(t, edge, "parcels")

	type moment struct {
		at      time.Time
		reports [2]*ingest.Report
	}
	var moments []moment
	snap := func() {
		t.Helper()
		m := moment{at: dbNow(t, e)}
		for i, method := range []string{ingest.MethodPointOnSurface, ingest.MethodIntersection} {
			r, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: method})
			require.NoError(t, err)
			m.reports[i] = r
		}
		moments = append(moments, m)
	}
	snap()

	// The parcels change: one moved, one removed, one added.
	lines := readFeatureLines(t, county)
	lines[3] = editFeature(t, lines[3], func(f map[string]any) { shiftGeometry(f, 3e-4) })
	lines = append(lines[:9:9], append(lines[10:], editFeature(t, lines[12], func(f map[string]any) { shiftGeometry(f, 0.01) }))...)
	writeFeatureLines(t, county, lines)
	e.rpIngest(t, county, "parcels")
	snap()

	// The admin layer is replaced: its units renamed.
	b, err := os.ReadFile(admin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(admin, []byte(strings.ReplaceAll(string(b), `"name":"`, `"name":"new `)), 0o644))
	e.rpIngest(t, admin, "admin_units")
	snap()
	require.NotEqual(t, moments[1].reports[0].Rows[0].AdminUnit, moments[2].reports[0].Rows[0].AdminUnit)

	for i, m := range moments {
		for k, want := range m.reports {
			got, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: want.Method, AsOf: m.at})
			require.NoError(t, err, "moment %d %s", i, want.Method)
			require.NotNil(t, got.AsOf)
			require.Equal(t, want.Total, got.Total, "moment %d %s: the ledger's total then", i, want.Method)
			require.Equal(t, want.Reconciled, got.Reconciled, "moment %d %s: difference %g", i, want.Method, got.Difference)
			require.InDelta(t, want.Difference, got.Difference, 1e-6*math.Abs(want.Total.AreaM2)+1e-3)
			require.Len(t, got.Rows, len(want.Rows), "moment %d %s", i, want.Method)
			for j, w := range want.Rows {
				g := got.Rows[j]
				require.Equal(t, w.AdminUnit, g.AdminUnit, "moment %d %s row %d", i, want.Method, j)
				require.Equal(t, w.Parcels, g.Parcels, "moment %d %s %s: parcels", i, want.Method, w.AdminUnit)
				tol := 1e-9*math.Abs(w.AreaM2) + 1e-6
				if k == 1 {
					tol = ingest.IntersectionTolerance*math.Abs(w.AreaM2) + 1e-3
				}
				require.InDelta(t, w.AreaM2, g.AreaM2, tol, "moment %d %s %s: area", i, want.Method, w.AdminUnit)
				require.Equal(t, w.Unassigned, g.Unassigned)
			}
		}
	}

	empty, err := e.store.AreaReport(ctx, ingest.AreaQuery{AsOf: before})
	require.NoError(t, err)
	require.Zero(t, empty.Total.Parcels, "nothing before the first version")
	for _, r := range empty.Rows {
		require.Zero(t, r.Parcels)
	}
}

func dbNow(t *testing.T, e *rpEnv) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&at))
	return at
}
