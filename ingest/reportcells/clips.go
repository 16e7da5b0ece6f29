package reportcells

import (
	"math"

	"github.com/geoingest/geoingest/geomio/overlay"
	"github.com/twpayne/go-geom"
)

// The clips of a unit, by square: what the pieces are computed against.

// clipKey names a square of a unit's clips.
type clipKey struct{ unit, kx, ky int32 }

// clipSquares is how many squares of clips span a unit's width or
// height, whichever is larger.
const clipSquares = 16

// sharedClip is a unit's clip to a square as arcs.go reads it: its
// polygons' rings, when GEOS clipped the unit validly (usable).
// It is immutable, and shared by every worker and job of the generation
// (Generation.clips).
type sharedClip struct {
	parts  []clipPart
	usable bool
}

// clipPart is one polygon of a clip: rings XY without closing points.
type clipPart struct {
	shell []float64
	holes [][]float64
	box   box
}

// square is the square of the unit at position i whose clip serves a
// parcel of box b: the unit is clipped, as geoingest_report_compute clips
// it, to a box that holds b grown by the unit's longest edge, so that
// every edge of the unit that meets b is in the clip whole, with its own
// vertices, and the clip's intersection with the parcel is the unit's,
// computed on some dozens of vertices instead of thousands. Clips are
// made per square (a sixteenth of the unit wide), each clipped to its
// square grown by half a square and the longest edge, and serve the
// parcels whose box is within half a square of it. false: the parcel is
// larger than that (the caller clips the whole unit).
func (w *Worker) square(i int32, b box) (clipKey, bool) {
	side := w.gen.units[i].clipSide
	if !(side > 1e-9) || math.IsInf(side, 0) {
		return clipKey{}, false
	}
	kx, ky := math.Floor((b.minX+b.maxX)/2/side), math.Floor((b.minY+b.maxY)/2/side)
	sq := box{kx * side, ky * side, (kx + 1) * side, (ky + 1) * side}
	half := side / 2
	if !(math.Abs(kx) < 1<<30 && math.Abs(ky) < 1<<30 &&
		b.minX >= sq.minX-half && b.maxX <= sq.maxX+half && b.minY >= sq.minY-half && b.maxY <= sq.maxY+half) {
		return clipKey{}, false
	}
	return clipKey{i, int32(kx), int32(ky)}, true
}

// squareBox is the box a square's clip is clipped to.
func (w *Worker) squareBox(k clipKey) box {
	u := w.gen.units[k.unit]
	side, grow := u.clipSide, u.clipGrow
	half := side / 2
	kx, ky := float64(k.kx), float64(k.ky)
	return box{kx*side - half - grow, ky*side - half - grow, (kx+1)*side + half + grow, (ky+1)*side + half + grow}
}

// geosClip is the worker's GEOS geometry of square k's clip, nil when
// GEOS does not clip the unit validly there.
func (w *Worker) geosClip(k clipKey) (*overlay.Geom, error) {
	if g, ok := w.clips[k]; ok {
		return g, nil
	}
	pu, err := w.unit(k.unit)
	if err != nil {
		return nil, err
	}
	g := w.clipTo(pu.g, w.squareBox(k))
	w.clips[k] = g
	return g, nil
}

// sharedClip is square k's clip for arcs.go, made once per
// generation (by the first worker that needs it).
func (w *Worker) sharedClip(k clipKey) (*sharedClip, error) {
	if sc := w.gen.clip(k); sc != nil {
		return sc, nil
	}
	g, err := w.geosClip(k)
	if err != nil {
		return nil, err
	}
	sc := &sharedClip{}
	if g != nil {
		sc.parts, sc.usable = w.partsOf(g)
	}
	return w.gen.keepClip(k, sc), nil
}

// partsOf is the polygons of g as rings without closing points, and
// false when g is not only polygons or cannot be read back.
func (w *Worker) partsOf(g *overlay.Geom) ([]clipPart, bool) {
	t, err := w.readBack(g)
	if err != nil {
		return nil, false
	}
	var parts []clipPart
	var add func(t geom.T) bool
	add = func(t geom.T) bool {
		switch t := t.(type) {
		case *geom.Polygon:
			var p clipPart
			for r := 0; r < t.NumLinearRings(); r++ {
				xy := appendRingXY(nil, t.LinearRing(r).FlatCoords(), t.Stride())
				if r == 0 {
					p.shell, p.box = xy, ringBox(xy)
				} else {
					p.holes = append(p.holes, xy)
				}
			}
			parts = append(parts, p)
		case *geom.MultiPolygon:
			for k := 0; k < t.NumPolygons(); k++ {
				add(t.Polygon(k))
			}
		case *geom.GeometryCollection:
			for _, g := range t.Geoms() {
				if !add(g) {
					return false
				}
			}
		default:
			return false
		}
		return true
	}
	if !add(t) {
		return nil, false
	}
	return parts, true
}

// clipTo is g clipped to r, or nil when GEOS does not clip it to a
// valid, non-empty geometry.
func (w *Worker) clipTo(g *overlay.Geom, r box) *overlay.Geom {
	c, err := w.c.ClipByRect(g, r.minX, r.minY, r.maxX, r.maxY)
	if err != nil {
		return nil
	}
	if ok, err := w.c.Valid(c); err != nil || !ok {
		w.c.Free(c)
		return nil
	}
	return c
}
