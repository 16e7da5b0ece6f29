package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestMigration0007UpDown takes a database with jobs in their own
// partitions and in the shared one down to version 6 (area_m2 generated
// again) and back up to 7 (a plain column), and checks that every row
// keeps its area through both (to within geodesic's tolerance where
// version 6 recomputes it with ST_Area), that verify stays clean, that
// the version 5 entry point of geoingest_finish_job_table still answers,
// and that a job written after the upgrade keeps area_m2 within that
// tolerance (written at the latest version) and an edit of a row's
// geometry has it recomputed by ST_Area(geom::geography).
func TestMigration0007UpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := newTestService(pool, ingest.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))

	write := func(name string, n int, own bool) string {
		var sb strings.Builder
		sb.WriteString(`{"type":"FeatureCollection","features":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString(",")
			}
			x, y := 2+float64(i%50)*0.001, 48+float64(i/50)*0.001
			fmt.Fprintf(&sb, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
				i, x, y, x+0.0005, y, x+0.0005, y+0.0004, x, y)
		}
		sb.WriteString(`]}`)
		path := filepath.Join(t.TempDir(), name+".geojson")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
		svc.Store.(*Store).OwnPartitionBytes = 1 << 40
		if own {
			svc.Store.(*Store).OwnPartitionBytes = 1
		}
		res := svc.Run(ctx, localJob(t, path, ingest.DefaultParams("parcels")))
		require.NoError(t, res.Err)
		return res.JobID
	}
	write("own", 300, true)
	shared := write("shared", 40, false)

	areas := func() map[int64]float64 {
		rows, err := pool.Query(ctx, `SELECT id, area_m2 FROM parcels`)
		require.NoError(t, err)
		m := map[int64]float64{}
		for rows.Next() {
			var id int64
			var a float64
			require.NoError(t, rows.Scan(&id, &a))
			m[id] = a
		}
		require.NoError(t, rows.Err())
		return m
	}
	generated := func() (yes, no int) {
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE a.attgenerated = 's'), count(*) FILTER (WHERE a.attgenerated = '')
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE a.attname = 'area_m2' AND NOT a.attisdropped AND c.relkind IN ('r', 'p') AND c.relname ~ '^parcels(_shared|_job_[0-9]+)?$'`).Scan(&yes, &no))
		return yes, no
	}
	requireClean := func() {
		t.Helper()
		var mismatched int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM parcels WHERE `+areaOff).Scan(&mismatched))
		require.Zero(t, mismatched)
		v, err := svc.Store.(*Store).Verify(ctx)
		require.NoError(t, err)
		require.True(t, v.OK(), "%v", v.Problems)
	}
	before := areas()
	require.Len(t, before, 340)
	yes, no := generated()
	require.Equal(t, [2]int{0, 3}, [2]int{yes, no}, "version 7: a plain column in the parent and both partitions")
	requireClean()

	require.NoError(t, migrations.To(url, 6))
	yes, no = generated()
	require.Equal(t, [2]int{3, 0}, [2]int{yes, no}, "version 6: generated again")
	at6 := areas()
	require.Len(t, at6, len(before))
	for id, a := range before {
		require.True(t, areaWithin(a, at6[id]), "row %d: written %.17g, recomputed by the generated column %.17g", id, a, at6[id])
	}
	requireClean()

	require.NoError(t, migrations.To(url, 7))
	yes, no = generated()
	require.Equal(t, [2]int{0, 3}, [2]int{yes, no})
	require.Equal(t, at6, areas(), "kept by DROP EXPRESSION: the same doubles")
	requireClean()

	// Version 5's entry point: measures and checks what has no area.
	var n int64
	var area, ledgerArea float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT f.written, f.area_m2, j.total_area_m2
		FROM jobs j, geoingest_finish_job_table('parcels', j.job_ref, true) f WHERE j.job_id = $1`, shared).Scan(&n, &area, &ledgerArea))
	require.EqualValues(t, 40, n)
	require.InEpsilon(t, ledgerArea, area, 1e-12)

	// The write path below is today's: it needs every later migration.
	require.NoError(t, migrations.To(url, migrations.Latest()))
	write("after", 200, true)
	_, err = pool.Exec(ctx, `UPDATE parcels SET geom = ST_Multi(ST_Buffer(geom, 0.0001)) WHERE feature_index = 3`)
	require.NoError(t, err)
	var edited int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM parcels WHERE feature_index = 3 AND area_m2 = ST_Area(geom::geography)`).Scan(&edited))
	require.EqualValues(t, 3, edited, "the trigger recomputed the edited rows' area")
}
