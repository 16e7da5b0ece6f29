package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Expired tiles (docs/changes.md, "Expired tiles"): the z/x/y map tiles
// (Web Mercator, XYZ) a job's changes touch, which a tile cache must drop.
// They are computed from the job's change record when asked: the old and
// new envelopes of every feature the job added, removed or changed (its
// extent for a source's first version and for a delete), widened by the
// tile server's buffer.

// TileZoom is the zoom range of an expired-tile list and its cap.
type TileZoom struct {
	Min, Max int
	// MaxTiles caps the list: zooms are listed from Min while the list
	// stays within it (ExpiredTiles.Deepest says where it stopped).
	MaxTiles int64
	// Buffer is how far around a tile its features are rendered, as a
	// fraction of the tile (ST_AsMVT's default 64/4096).
	Buffer float64
}

// DefaultTileZoom is the range of an expired-tile list that names none:
// zooms 0 to 14 (a parcel is a few pixels at 14; deeper tiles are
// usually rendered on demand from the features), at most 100,000 tiles,
// a buffer of 64/4096.
var DefaultTileZoom = TileZoom{Min: 0, Max: 14, MaxTiles: 100000, Buffer: 64.0 / 4096}

// ParseTileZoom parses a zoom range "MIN-MAX" (or "Z" for one zoom) into
// z, keeping its cap and buffer.
func ParseTileZoom(s string, z TileZoom) (TileZoom, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 0 || b > 30 || a > b {
		return z, Permanentf("zoom range %q: want MIN-MAX with 0 <= MIN <= MAX <= 30", s)
	}
	z.Min, z.Max = a, b
	return z, nil
}

// String is the range as ParseTileZoom reads it.
func (z TileZoom) String() string { return fmt.Sprintf("%d-%d", z.Min, z.Max) }

// Tile is one z/x/y tile.
type Tile struct {
	Z int `json:"z"`
	X int `json:"x"`
	Y int `json:"y"`
}

func (t Tile) String() string { return fmt.Sprintf("%d/%d/%d", t.Z, t.X, t.Y) }

// ExpiredTiles is a job's expired-tile list.
type ExpiredTiles struct {
	Job     string `json:"job"`
	MinZoom int    `json:"min_zoom"`
	MaxZoom int    `json:"max_zoom"`
	// Deepest is the deepest zoom listed (-1 when nothing changed). When
	// it is below MaxZoom the cap was reached: a cache drops each listed
	// tile of zoom Deepest with all its descendants. When the cap did not
	// allow even MinZoom, the list is one zoom below MinZoom.
	Deepest int    `json:"deepest_zoom"`
	Tiles   []Tile `json:"tiles"`
}

// Truncated reports whether the cap cut the list short of MaxZoom.
func (e ExpiredTiles) Truncated() bool { return e.Deepest >= 0 && e.Deepest < e.MaxZoom }

// TileExpiry lists the tiles a job expired (the PostGIS store's,
// migration 0029).
type TileExpiry interface {
	// ExpiredTiles lists job's expired tiles in z's range, zoom by zoom,
	// x then y. A job with no change record is an error wrapping
	// ErrNoChanges.
	ExpiredTiles(ctx context.Context, job string, z TileZoom) (ExpiredTiles, error)
}
