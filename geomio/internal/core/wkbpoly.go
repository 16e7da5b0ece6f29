package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twpayne/go-geom"
)

// PolyDecoder decodes the 2D ISO WKB of a Polygon or MultiPolygon
// straight into a MultiPolygon over buffers it reuses from one call to
// the next (a reader's Feature is valid until its next Next), so that the
// common case of a polygon layer allocates nothing per feature. Any other
// type is reported as not handled, for the general decoder.
type PolyDecoder struct {
	flat  []float64
	endss [][]int // each polygon's ring ends, reused (capacity kept)
	out   [][]int // the views of endss the MultiPolygon gets
}

var errWKB = errors.New("truncated or invalid WKB")

// Decode returns the MultiPolygon b holds, nil and false when b is not a
// little-endian 2D Polygon or MultiPolygon, or an error when it is one
// but is malformed. An empty polygon decodes to nil, true.
func (d *PolyDecoder) Decode(b []byte) (geom.T, bool, error) {
	if len(b) < 5 || b[0] != 1 {
		return nil, false, nil
	}
	typ := binary.LittleEndian.Uint32(b[1:5])
	if typ != 3 && typ != 6 {
		return nil, false, nil
	}
	d.flat = d.flat[:0]
	npoly := 0
	rest := b[5:]
	var err error
	if typ == 3 {
		if rest, err = d.polygon(rest, &npoly); err != nil {
			return nil, true, err
		}
	} else {
		if len(rest) < 4 {
			return nil, true, errWKB
		}
		n := int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
		if n > len(rest)/9 {
			return nil, true, errWKB
		}
		for i := 0; i < n; i++ {
			if len(rest) < 5 || rest[0] != 1 || binary.LittleEndian.Uint32(rest[1:5]) != 3 {
				return nil, true, errWKB
			}
			if rest, err = d.polygon(rest[5:], &npoly); err != nil {
				return nil, true, err
			}
		}
	}
	if len(rest) != 0 {
		return nil, true, fmt.Errorf("%w: %d bytes after the geometry", errWKB, len(rest))
	}
	if npoly == 0 {
		return nil, true, nil
	}
	d.out = d.out[:0]
	for _, e := range d.endss[:npoly] {
		d.out = append(d.out, e[:len(e):len(e)])
	}
	return geom.NewMultiPolygonFlat(geom.XY, d.flat[:len(d.flat):len(d.flat)], d.out[:npoly:npoly]), true, nil
}

// polygon appends the rings of one polygon body (after its header) and
// counts it in *npoly unless it is empty.
func (d *PolyDecoder) polygon(b []byte, npoly *int) ([]byte, error) {
	if len(b) < 4 {
		return nil, errWKB
	}
	nrings := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if nrings > len(b)/4 {
		return nil, errWKB
	}
	if nrings == 0 {
		return b, nil
	}
	if *npoly == len(d.endss) {
		d.endss = append(d.endss, nil)
	}
	ends := d.endss[*npoly][:0]
	start := len(d.flat)
	for r := 0; r < nrings; r++ {
		if len(b) < 4 {
			return nil, errWKB
		}
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if n > len(b)/16 {
			return nil, errWKB
		}
		for i := 0; i < n; i++ {
			x := math.Float64frombits(binary.LittleEndian.Uint64(b))
			y := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
			if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				return nil, errors.New("non-finite coordinate")
			}
			d.flat = append(d.flat, x, y)
			b = b[16:]
		}
		ends = append(ends, len(d.flat))
	}
	d.endss[*npoly] = ends
	if len(d.flat) > start { // a polygon of empty rings is empty
		*npoly++
	}
	return b, nil
}

// PromotePolygons normalises a decoded geometry as Feature.Geom documents:
// a Polygon becomes a MultiPolygon, and a GeometryCollection (a KML
// MultiGeometry) with polygons becomes the MultiPolygon of its polygons,
// its points and lines dropped, as OGR's forceToMultiPolygon does; an
// empty geometry is nil.
func PromotePolygons(g geom.T) geom.T {
	switch t := g.(type) {
	case *geom.Polygon:
		if t.Empty() {
			return nil
		}
		mp := geom.NewMultiPolygon(geom.XY)
		_ = mp.Push(t)
		return mp
	case *geom.MultiPolygon:
		if t.Empty() {
			return nil
		}
	case *geom.GeometryCollection:
		mp := geom.NewMultiPolygon(geom.XY)
		collectPolygons(t, mp)
		if mp.NumPolygons() > 0 {
			return mp
		}
		if t.Empty() {
			return nil
		}
	}
	return g
}

func collectPolygons(c *geom.GeometryCollection, mp *geom.MultiPolygon) {
	for _, g := range c.Geoms() {
		switch t := g.(type) {
		case *geom.Polygon:
			if !t.Empty() {
				_ = mp.Push(t)
			}
		case *geom.MultiPolygon:
			for i := 0; i < t.NumPolygons(); i++ {
				if p := t.Polygon(i); !p.Empty() {
					_ = mp.Push(p)
				}
			}
		case *geom.GeometryCollection:
			collectPolygons(t, mp)
		}
	}
}
