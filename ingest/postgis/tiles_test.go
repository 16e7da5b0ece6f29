package postgis

import (
	"context"
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
