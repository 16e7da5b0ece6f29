package reportcells

import (
	"fmt"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/overlay"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// The pieces of a boundary parcel: their areas on the spheroid, from the
// rings (arcs.go) where they can be, else by GEOS.

// pieceArea is ST_Area(ST_Intersection(unit, parcel)::geography), for
// the unit at position i, parcel of box b: from the rings of the parcel
// and of the unit's clip for its square (arcs.go) where they can, or else
// by GEOS with a clip of the unit around the parcel.
func (w *Worker) pieceArea(i int32, pu *prepGeom, parcel *overlay.Geom, b box) (float64, error) {
	k, inSquare := w.square(i, b)
	if inSquare {
		sc, err := w.sharedClip(k)
		if err != nil {
			return 0, err
		}
		if sc.usable {
			if a, ok := w.arcPiece(sc.parts); ok {
				w.stats.ArcPieces++
				return a, nil
			}
		}
	}
	// GEOS: none if the parcel does not meet the unit (ST_Intersects).
	meets, err := w.c.Intersects(pu.p, parcel)
	if err != nil {
		return 0, fmt.Errorf("GEOS failed on ST_Intersects")
	}
	if !meets {
		return 0, nil
	}
	from := pu.g
	if inSquare {
		g, err := w.geosClip(k)
		if err != nil {
			return 0, err
		}
		if g != nil {
			from = g
		}
	}
	grow := w.gen.units[i].clipGrow
	if clip := w.clipTo(from, box{b.minX - grow, b.minY - grow, b.maxX + grow, b.maxY + grow}); clip != nil {
		defer w.c.Free(clip)
		from = clip
	}
	w.stats.GEOSPieces++
	x, err := w.c.Intersection(from, parcel)
	if err != nil {
		return 0, fmt.Errorf("GEOS failed on ST_Intersection")
	}
	defer w.c.Free(x)
	return w.area(x)
}

// setRing keeps the parcel's rings for arcPiece.
func (w *Worker) setRing(mp *geom.MultiPolygon, b box, area float64) {
	w.pring = w.pring[:0]
	w.prings = w.prings[:0]
	c, st := mp.FlatCoords(), mp.Stride()
	start := 0
	for _, ends := range mp.Endss() {
		for r, end := range ends {
			k0 := len(w.pring)
			w.pring = appendRingXY(w.pring, c[start:end], st)
			w.prings = append(w.prings, pRing{k0, len(w.pring), r > 0})
			start = end
		}
	}
	w.pbox, w.parea = b, area
}

// pRing is one ring of the parcel in pring: a shell, or a hole of the
// shell before it.
type pRing struct {
	start, end int
	hole       bool
}

// arcPiece is the area of the current parcel's intersection with the
// clip parts computed from their rings (arcs.go), and false when it
// leaves the case to GEOS. The pieces of a multipolygon's polygons are
// disjoint, and together the piece GEOS makes; a hole of the parcel that
// lies inside a clip ring (and meets none of its holes) takes its own
// area from the piece, as GEOS's piece keeps it as a hole.
func (w *Worker) arcPiece(parts []clipPart) (float64, bool) {
	single := len(w.prings) == 1
	sum := 0.0
	for i := 0; i < len(w.prings); {
		sh := w.prings[i]
		shell := w.pring[sh.start:sh.end]
		sb := w.pbox
		area := w.parea
		if !single {
			sb, area = ringBox(shell), -1
		}
		j := i + 1
		for j < len(w.prings) && w.prings[j].hole {
			j++
		}
		holes := w.prings[i+1 : j]
		i = j
		if !partsMeet(parts, sb) {
			continue
		}
		a, ok := w.arcPolygon(parts, shell, sb, area)
		if !ok {
			return 0, false
		}
		for _, h := range holes {
			hole := w.pring[h.start:h.end]
			hb := ringBox(hole)
			for pi := range parts {
				part := &parts[pi]
				if !part.box.meets(hb) {
					continue
				}
				_, rel, ok := w.arcs.piece(hole, hb, part.shell, part.box)
				if !ok || rel == ringCrosses || rel == ringInside {
					return 0, false
				}
				if rel == ringMisses {
					continue
				}
				for _, ch := range part.holes { // rel == ringHolds
					if ringBox(ch).meets(hb) {
						return 0, false
					}
				}
				ha, ok := w.ringArea(hole)
				if !ok {
					return 0, false
				}
				a -= ha
			}
		}
		sum += a
	}
	return sum, true
}

// partsMeet reports whether some part's box meets b.
func partsMeet(parts []clipPart, b box) bool {
	for i := range parts {
		if parts[i].box.meets(b) {
			return true
		}
	}
	return false
}

// arcPolygon is arcPiece for one polygon of the parcel, ring (box pb),
// whose area is area, or -1 when it is to be measured.
func (w *Worker) arcPolygon(parts []clipPart, ring []float64, pb box, area float64) (float64, bool) {
	sum := 0.0
	for pi := range parts {
		part := &parts[pi]
		if !part.box.meets(pb) {
			continue
		}
		out, rel, ok := w.arcs.piece(ring, pb, part.shell, part.box)
		if !ok {
			return 0, false
		}
		var a float64
		switch rel {
		case ringMisses:
			continue
		case ringHolds:
			a = area // the piece is the parcel
			if a < 0 {
				if a, ok = w.ringArea(ring); !ok {
					return 0, false
				}
			}
		case ringInside:
			if a, ok = w.ringArea(part.shell); !ok {
				return 0, false
			}
		case ringCrosses:
			if a, ok = w.ringArea(out); !ok {
				return 0, false
			}
		}
		for _, hole := range part.holes {
			hb := ringBox(hole)
			if !hb.meets(pb) {
				continue
			}
			_, hrel, ok := w.arcs.piece(ring, pb, hole, hb)
			switch {
			case !ok || hrel == ringCrosses || hrel == ringHolds:
				return 0, false // the hole meets the parcel's boundary, or holds it
			case hrel == ringInside:
				ha, ok := w.ringArea(hole)
				if !ok {
					return 0, false
				}
				a -= ha
			}
		}
		sum += a
	}
	return sum, true
}

// ringArea is the area on the spheroid of one ring (XY, without its
// closing point).
func (w *Worker) ringArea(xy []float64) (float64, bool) {
	flat := make([]float64, 0, len(xy)+2)
	flat = append(append(flat, xy...), xy[0], xy[1])
	mp := geom.NewMultiPolygonFlat(geom.XY, flat, [][]int{{len(flat)}})
	return geodesic.Area(mp, &w.scratch)
}

// ringBox is the box of a ring (XY).
func ringBox(xy []float64) box { return boundsXY(xy, 2) }

// area is ST_Area(g::geography) of a GEOS result: the sum of its
// polygons' areas on the spheroid.
func (w *Worker) area(g *overlay.Geom) (float64, error) {
	t, err := w.readBack(g)
	if err != nil {
		return 0, err
	}
	return w.areaOf(t)
}

// readBack is a GEOS geometry as go-geom's, through its WKB.
func (w *Worker) readBack(g *overlay.Geom) (geom.T, error) {
	var err error
	if w.buf, err = w.c.AppendWKB(w.buf[:0], g); err != nil {
		return nil, fmt.Errorf("GEOS cannot write a result: %w", err)
	}
	t, err := wkb.Unmarshal(w.buf)
	if err != nil {
		return nil, fmt.Errorf("a GEOS result: %w", err)
	}
	return t, nil
}

func (w *Worker) areaOf(t geom.T) (float64, error) {
	var mp *geom.MultiPolygon
	switch t := t.(type) {
	case *geom.MultiPolygon:
		mp = t
	case *geom.Polygon:
		mp = geom.NewMultiPolygon(t.Layout())
		if err := mp.Push(t); err != nil {
			return 0, err
		}
	case *geom.GeometryCollection:
		sum := 0.0
		for _, g := range t.Geoms() {
			a, err := w.areaOf(g)
			if err != nil {
				return 0, err
			}
			sum += a
		}
		return sum, nil
	default:
		return 0, nil // points and lines have no area
	}
	if mp.Empty() {
		return 0, nil
	}
	a, ok := geodesic.Area(mp, &w.scratch)
	if !ok {
		return 0, fmt.Errorf("a piece's area on the spheroid cannot be computed here")
	}
	return a, nil
}
