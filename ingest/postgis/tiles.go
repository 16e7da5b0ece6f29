package postgis

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

var _ ingest.TileExpiry = (*Store)(nil)

// ExpiredTiles lists the tiles job expired (migration 0029,
// geoingest_expired_tiles), computed from its change record.
func (s *Store) ExpiredTiles(ctx context.Context, job string, z ingest.TileZoom) (ingest.ExpiredTiles, error) {
	out := ingest.ExpiredTiles{Job: job, MinZoom: z.Min, MaxZoom: z.Max, Deepest: -1, Tiles: []ingest.Tile{}}
	if z.Min < 0 || z.Max > 30 || z.Min > z.Max || z.MaxTiles < 1 || !(z.Buffer >= 0 && z.Buffer <= 1) { // NaN too
		return out, ingest.Permanentf("tiles: zoom range %s, at most %d tiles, buffer %g: want 0 <= min <= max <= 30, at least one tile, a buffer in [0, 1]",
			z, z.MaxTiles, z.Buffer)
	}
	has, err := s.q.JobHasChanges(ctx, job)
	if err != nil {
		return out, err
	}
	if !has {
		return out, fmt.Errorf("job %s: %w", job, ingest.ErrNoChanges)
	}
	rows, err := s.q.ExpiredTiles(ctx, db.ExpiredTilesParams{JobID: job, MinZoom: int32(z.Min), MaxZoom: int32(z.Max),
		MaxTiles: z.MaxTiles, Buffer: z.Buffer})
	if err != nil {
		return out, fmt.Errorf("expired tiles of %s: %w", job, normaliseErr(err))
	}
	for _, r := range rows {
		out.Tiles = append(out.Tiles, ingest.Tile{Z: int(r.Z), X: int(r.X), Y: int(r.Y)})
		out.Deepest = max(out.Deepest, int(r.Z))
	}
	return out, nil
}
