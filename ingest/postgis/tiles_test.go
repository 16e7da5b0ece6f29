package postgis

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestExpiredTilesRefusesABadRange: a zoom range, cap or buffer out of
// bounds is refused before the database is asked. A buffer of NaN
// (`changes --tiles --tile-buffer NaN`) passed the check, every
// comparison with NaN being false, and reached the SQL function, whose
// refusal came back as "normalise features: ERROR: ... (SQLSTATE 22023)".
func TestExpiredTilesRefusesABadRange(t *testing.T) {
	s := &Store{} // no database: the check comes first
	ok := ingest.TileZoom{Min: 0, Max: 14, MaxTiles: 10, Buffer: 0.015625}
	for name, z := range map[string]ingest.TileZoom{
		"buffer NaN":  {Min: 0, Max: 14, MaxTiles: 10, Buffer: math.NaN()},
		"buffer -1":   {Min: 0, Max: 14, MaxTiles: 10, Buffer: -1},
		"buffer 2":    {Min: 0, Max: 14, MaxTiles: 10, Buffer: 2},
		"no tiles":    {Min: 0, Max: 14, MaxTiles: 0, Buffer: ok.Buffer},
		"min > max":   {Min: 5, Max: 2, MaxTiles: 10, Buffer: ok.Buffer},
		"max 31":      {Min: 0, Max: 31, MaxTiles: 10, Buffer: ok.Buffer},
		"min below 0": {Min: -1, Max: 2, MaxTiles: 10, Buffer: ok.Buffer},
	} {
		_, err := s.ExpiredTiles(context.Background(), "j", z)
		require.ErrorContains(t, err, "want 0 <= min <= max <= 30, at least one tile, a buffer in [0, 1]", name)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), name)
	}
}

// TestExpiredTilesCapCountsASharedTileOnce: the cap counts a tile once,
// however many changed features share it. 100 parcels whose attributes
// changed, all in one tile at the low zooms, made 200 ranges (old and new
// boxes) of that tile; the cap's bound (the sum of the ranges' sizes) was
// over 16 times a cap of 5 even at zoom 0, so no zoom "fitted" and the
// job listed no tile at all: the empty list a cache reads as nothing to
// purge (serve's route option expire-max-tiles=5 sent it in the webhook).
func TestExpiredTilesCapCountsASharedTileOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v1 := version(t, parcelsFile(t, "v1.geojson", 200, 13, apn), "v1", "01", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
	changed := func(i int) string {
		if i < 100 {
			return fmt.Sprintf(`{"APN":"%07d","use":"R2"}`, i)
		}
		return apn(i)
	}
	v2 := version(t, parcelsFile(t, "v2.geojson", 200, 13, changed), "v2", "02", ingest.DefaultParams("parcels"))
	res := b.svc.Run(ctx, v2)
	require.Equal(t, ingest.Written, res.Outcome, "%v", res.Err)
	require.EqualValues(t, 100, res.Changes.Counts.Attributes)

	all, err := b.store.ExpiredTiles(ctx, v2.ID, ingest.TileZoom{Min: 0, Max: 14, MaxTiles: 100000, Buffer: 0.015625})
	require.NoError(t, err)
	require.Equal(t, 14, all.Deepest)
	capped, err := b.store.ExpiredTiles(ctx, v2.ID, ingest.TileZoom{Min: 0, Max: 14, MaxTiles: 5, Buffer: 0.015625})
	require.NoError(t, err)
	require.NotEmpty(t, capped.Tiles, "a job that changed 100 parcels expires some tile")
	require.GreaterOrEqual(t, capped.Deepest, 0)
	require.Less(t, capped.Deepest, 14)
	require.LessOrEqual(t, len(capped.Tiles), 5)
	require.Contains(t, capped.Tiles, ingest.Tile{Z: 0, X: 0, Y: 0})
	// Each zoom listed is the uncapped list's at that zoom.
	for _, tile := range capped.Tiles {
		require.Contains(t, all.Tiles, tile)
	}
}
