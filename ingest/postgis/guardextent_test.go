package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestGuardExtentFromTheWorkers: the extent the guards record of a
// version in EPSG:4326 is the one the prepare workers measured, and it is
// its rows' extent (ST_Extent, within its single-precision boxes); a
// version whose features the server repaired is measured from its rows.
func TestGuardExtentFromTheWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i, path := range []string{parcelsFile(t, "a.geojson", 300, 13, apn), badFeaturesFile(t, "b.geojson", 60)} {
		job := version(t, path, []string{"v1", "v2"}[i], []string{"01", "02"}[i], ingest.DefaultParams("parcels"))
		job.Guards.Off = true // the second version shrinks: it is written all the same
		res := b.svc.Run(ctx, job)
		require.NoError(t, res.Err)
		var rec, rows [4]float64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT min_x, min_y, max_x, max_y FROM geoingest_job_stats WHERE job_id = $1`, job.ID).
			Scan(&rec[0], &rec[1], &rec[2], &rec[3]))
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)
			FROM (SELECT ST_Extent(geom) e FROM parcels p JOIN jobs j USING (job_ref) WHERE j.job_id = $1) x`, job.ID).
			Scan(&rows[0], &rows[1], &rows[2], &rows[3]))
		require.InDeltaSlice(t, rows[:], rec[:], 1e-5, "version %d", i+1)
	}
}
