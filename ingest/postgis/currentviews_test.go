package postgis

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestCurrentViewsCostWhatTheTablesCost: a spatial join of the current
// parcels with the current admin units that reads no ledger column is
// planned on the feature tables alone (migration 0023: the views' outer
// joins on unique keys are removed), while a query that reads
// pipeline_version still gets it from the ledger for every row.
func TestCurrentViewsCostWhatTheTablesCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	res := b.svc.Run(ctx, localJob(t, epinay, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)

	join := planOf(t, b.pool, `SELECT a.id, count(*) FROM geoingest_current_parcels p
		JOIN geoingest_current_admin_units a ON ST_Intersects(p.geom, a.geom)
		WHERE p.geom && ST_MakeEnvelope(2.2, 48.9, 2.4, 49.0, 4326) GROUP BY a.id`)
	require.NotContains(t, join, " on jobs", join)
	require.NotContains(t, join, " on sources", join)
	require.NotContains(t, join, "jobs_", join)
	require.NotContains(t, join, "sources_", join)

	var n, withVersion int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), count(pipeline_version) FROM geoingest_current_parcels`).Scan(&n, &withVersion))
	require.Positive(t, n)
	require.Equal(t, n, withVersion, "every current row has its pipeline version")
	var tableRows int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&tableRows))
	require.Equal(t, tableRows, n)
}
