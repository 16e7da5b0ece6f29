package postgis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCurrentAdminUnitsFindTheirSourcesByIndex: with thousands of parcel
// sources, a query of the current admin units by pipeline version (as the
// reports make) reaches their few sources through an index (migration
// 0022), not by scanning every source on every query.
func TestCurrentAdminUnitsFindTheirSourcesByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.pool.Exec(ctx, `
		INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version)
		SELECT 'bucket', 'parcels/' || i || '.geojson', 'parcels', 'v1' FROM generate_series(1, 3000) i;
		INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version)
		VALUES ('bucket', 'admin/units.geojson', 'admin_units', 'v1');
		ANALYZE sources`)
	require.NoError(t, err)
	text := planOf(t, b.pool, `SELECT a.id FROM geoingest_current_admin_units a WHERE a.pipeline_version = 'v1'`)
	require.NotContains(t, text, "Seq Scan on sources", text)
	require.Contains(t, text, "sources_target_current_idx", text)
}
