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

// TestExpiredTilesByJobPrefix: the SQL function takes what the CLI takes,
// a unique prefix of a job id (the CLI prints 12 digits), and names what
// it could not find. Given a prefix it returned no tile, the empty list a
// cache reads as "nothing to purge".
func TestExpiredTilesByJobPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v1 := version(t, parcelsFile(t, "v1.geojson", 20, 13, apn), "v1", "01", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
	changed := func(i int) string {
		if i < 5 {
			return fmt.Sprintf(`{"APN":"%07d","use":"R2"}`, i)
		}
		return apn(i)
	}
	v2 := version(t, parcelsFile(t, "v2.geojson", 20, 13, changed), "v2", "02", ingest.DefaultParams("parcels"))
	res := b.svc.Run(ctx, v2)
	require.Equal(t, ingest.Written, res.Outcome, "%v", res.Err)

	tiles := func(id string) (int, error) {
		var n int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_expired_tiles($1, 0, 10)`, id).Scan(&n)
		return n, err
	}
	whole, err := tiles(v2.ID)
	require.NoError(t, err)
	require.Positive(t, whole)
	short, err := tiles(v2.ID[:12])
	require.NoError(t, err)
	require.Equal(t, whole, short, "a unique prefix stands for its job")

	_, err = tiles("0123456789ab")
	require.ErrorContains(t, err, "no job 0123456789ab")
	_, err = tiles("nope")
	require.ErrorContains(t, err, "no job nope")
	// A prefix two jobs' ids start: a copy of v2's records under an id
	// that differs from v2's in its last digits only, in a transaction
	// rolled back.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	twin := v2.ID[:60] + "0000"
	if twin == v2.ID {
		twin = v2.ID[:60] + "ffff"
	}
	for _, table := range []string{"jobs", "job_changes"} {
		for _, q := range []string{
			`CREATE TEMP TABLE twin (LIKE ` + table + `) ON COMMIT DROP`,
			`INSERT INTO twin SELECT * FROM ` + table + ` WHERE job_id = '` + v2.ID + `'`,
			`UPDATE twin SET job_id = '` + twin + `'` + map[string]string{"jobs": `, job_ref = (SELECT max(job_ref) + 1 FROM jobs)`}[table],
			`INSERT INTO ` + table + ` SELECT * FROM twin`,
			`DROP TABLE twin`,
		} {
			_, err := tx.Exec(ctx, q)
			require.NoError(t, err, q)
		}
	}
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM geoingest_expired_tiles($1, 0, 10)`, v2.ID[:12]).Scan(&n)
	require.ErrorContains(t, err, "job id prefix "+v2.ID[:12]+" is ambiguous")
}
