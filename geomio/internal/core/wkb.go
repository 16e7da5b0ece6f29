package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twpayne/go-geom"
)

// ParseWKB decodes one geometry in Well-Known Binary, as GeoParquet and
// GDAL write it: ISO WKB (Z, M and ZM as type codes 1000, 2000 and 3000
// higher) or extended WKB (PostGIS's flag bits, with or without an
// SRID, which is ignored), in either byte order. It returns the geometry
// normalised as Feature.Geom documents: XY only, Polygon promoted to
// MultiPolygon, empty parts dropped, and nil for an empty geometry.
//
// Every count is checked against the bytes left before anything is
// allocated, and collections nest at most maxWKBDepth deep, so a corrupt
// or hostile input costs no more memory than its own size and never
// panics. Trailing bytes after the geometry are an error.
func ParseWKB(b []byte) (geom.T, error) {
	d := wkbDecoder{b: b}
	g, err := d.geometry(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("wkb: %d trailing bytes after the geometry", len(d.b)-d.off)
	}
	return g, nil
}

// maxWKBDepth bounds how deeply geometry collections may nest.
const maxWKBDepth = 32

var errWKBShort = errors.New("wkb: truncated")

// wkbDecoder reads b from off.
type wkbDecoder struct {
	b   []byte
	off int
}

func (d *wkbDecoder) left() int { return len(d.b) - d.off }

func (d *wkbDecoder) u32(o binary.ByteOrder) (uint32, error) {
	if d.left() < 4 {
		return 0, errWKBShort
	}
	v := o.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

// header reads a geometry's byte order and type, returning the base type
// (1-7) and the number of coordinates per point.
func (d *wkbDecoder) header() (binary.ByteOrder, uint32, int, error) {
	if d.left() < 5 {
		return nil, 0, 0, errWKBShort
	}
	var o binary.ByteOrder
	switch d.b[d.off] {
	case 0:
		o = binary.BigEndian
	case 1:
		o = binary.LittleEndian
	default:
		return nil, 0, 0, fmt.Errorf("wkb: byte order %d at byte %d is neither 0 nor 1", d.b[d.off], d.off)
	}
	d.off++
	t, _ := d.u32(o)
	stride := 2
	// Extended WKB (PostGIS): flag bits for Z, M and an SRID that follows.
	if t&0x80000000 != 0 {
		stride++
	}
	if t&0x40000000 != 0 {
		stride++
	}
	if t&0x20000000 != 0 {
		if _, err := d.u32(o); err != nil {
			return nil, 0, 0, err
		}
	}
	t &= 0x0FFFFFFF
	switch t / 1000 {
	case 0:
	case 1, 2:
		stride++
	case 3:
		stride += 2
	default:
		return nil, 0, 0, fmt.Errorf("wkb: unknown geometry type %d", t)
	}
	if stride > 4 {
		return nil, 0, 0, fmt.Errorf("wkb: geometry type %d has conflicting dimension flags", t)
	}
	base := t % 1000
	if base < 1 || base > 7 {
		return nil, 0, 0, fmt.Errorf("wkb: unsupported geometry type %d (geoingest reads points, lines, polygons, their multi forms and collections)", t)
	}
	return o, base, stride, nil
}

// points reads a count and that many points, keeping X and Y.
func (d *wkbDecoder) points(o binary.ByteOrder, stride int, flat []float64) ([]float64, int, error) {
	n, err := d.u32(o)
	if err != nil {
		return flat, 0, err
	}
	if uint64(n)*uint64(stride)*8 > uint64(d.left()) {
		return flat, 0, fmt.Errorf("wkb: %d points do not fit in the %d bytes left", n, d.left())
	}
	for i := 0; i < int(n); i++ {
		x := math.Float64frombits(o.Uint64(d.b[d.off:]))
		y := math.Float64frombits(o.Uint64(d.b[d.off+8:]))
		d.off += stride * 8
		if !Finite(x, y) {
			return flat, 0, errors.New("wkb: non-finite coordinate")
		}
		flat = append(flat, x, y)
	}
	return flat, int(n), nil
}

// count reads a count of parts, each at least minBytes long.
func (d *wkbDecoder) count(o binary.ByteOrder, minBytes int) (int, error) {
	n, err := d.u32(o)
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minBytes) > uint64(d.left()) {
		return 0, fmt.Errorf("wkb: %d parts do not fit in the %d bytes left", n, d.left())
	}
	return int(n), nil
}

func (d *wkbDecoder) geometry(depth int) (geom.T, error) {
	if depth > maxWKBDepth {
		return nil, fmt.Errorf("wkb: collections nested more than %d deep", maxWKBDepth)
	}
	o, t, stride, err := d.header()
	if err != nil {
		return nil, err
	}
	switch t {
	case 1: // Point
		if d.left() < stride*8 {
			return nil, errWKBShort
		}
		x := math.Float64frombits(o.Uint64(d.b[d.off:]))
		y := math.Float64frombits(o.Uint64(d.b[d.off+8:]))
		d.off += stride * 8
		if math.IsNaN(x) && math.IsNaN(y) {
			return nil, nil // POINT EMPTY
		}
		if !Finite(x, y) {
			return nil, errors.New("wkb: non-finite coordinate")
		}
		return geom.NewPointFlat(geom.XY, []float64{x, y}), nil
	case 2: // LineString
		flat, n, err := d.points(o, stride, nil)
		if err != nil || n == 0 {
			return nil, err
		}
		return geom.NewLineStringFlat(geom.XY, flat), nil
	case 3: // Polygon
		var flat []float64
		ends, err := d.polygon(o, stride, &flat, 0)
		if err != nil || len(ends) == 0 {
			return nil, err
		}
		return geom.NewMultiPolygonFlat(geom.XY, flat, [][]int{ends}), nil
	case 4, 5, 6: // MultiPoint, MultiLineString, MultiPolygon
		return d.multi(o, t, depth)
	default: // GeometryCollection
		n, err := d.count(o, 9)
		if err != nil {
			return nil, err
		}
		gc := geom.NewGeometryCollection()
		for i := 0; i < n; i++ {
			g, err := d.geometry(depth + 1)
			if err != nil {
				return nil, err
			}
			if g == nil {
				continue
			}
			if err := gc.Push(g); err != nil {
				return nil, err
			}
		}
		if gc.NumGeoms() == 0 {
			return nil, nil
		}
		return gc, nil
	}
}

// polygon reads one polygon's rings into flat and returns their ends, or
// none when its exterior ring is empty (an empty polygon). A non-empty
// ring must be closed and have at least 4 positions: PostGIS refuses
// anything else, and it is the file's fault.
func (d *wkbDecoder) polygon(o binary.ByteOrder, stride int, flat *[]float64, poly int) ([]int, error) {
	nr, err := d.count(o, 4)
	if err != nil {
		return nil, err
	}
	var ends []int
	for j := 0; j < nr; j++ {
		start := len(*flat)
		f, n, err := d.points(o, stride, *flat)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			if j == 0 {
				// An empty exterior: the holes, if any, go with it.
				for k := j + 1; k < nr; k++ {
					if _, _, err := d.points(o, stride, nil); err != nil {
						return nil, err
					}
				}
				*flat = (*flat)[:start]
				return nil, nil
			}
			continue
		}
		if n < 4 {
			return nil, fmt.Errorf("polygon %d ring %d has %d positions; a linear ring needs at least 4", poly, j, n)
		}
		if f[start] != f[len(f)-2] || f[start+1] != f[len(f)-1] {
			return nil, fmt.Errorf("polygon %d ring %d is not closed (its first and last positions differ)", poly, j)
		}
		*flat = f
		ends = append(ends, len(f))
	}
	return ends, nil
}

// multi reads a MultiPoint, MultiLineString or MultiPolygon, whose parts
// are geometries of the single type, each with its own header.
func (d *wkbDecoder) multi(o binary.ByteOrder, t uint32, depth int) (geom.T, error) {
	n, err := d.count(o, 9)
	if err != nil {
		return nil, err
	}
	var flat []float64
	var ends []int
	var endss [][]int
	for i := 0; i < n; i++ {
		po, pt, pstride, err := d.header()
		if err != nil {
			return nil, err
		}
		if pt != t-3 {
			return nil, fmt.Errorf("wkb: a part of geometry type %d in a multi geometry of type %d", pt, t)
		}
		switch pt {
		case 1:
			if d.left() < pstride*8 {
				return nil, errWKBShort
			}
			x := math.Float64frombits(po.Uint64(d.b[d.off:]))
			y := math.Float64frombits(po.Uint64(d.b[d.off+8:]))
			d.off += pstride * 8
			if math.IsNaN(x) && math.IsNaN(y) {
				continue
			}
			if !Finite(x, y) {
				return nil, errors.New("wkb: non-finite coordinate")
			}
			flat = append(flat, x, y)
		case 2:
			f, m, err := d.points(po, pstride, flat)
			if err != nil {
				return nil, err
			}
			if m > 0 {
				flat = f
				ends = append(ends, len(flat))
			}
		case 3:
			e, err := d.polygon(po, pstride, &flat, i)
			if err != nil {
				return nil, err
			}
			if len(e) > 0 {
				endss = append(endss, e)
			}
		}
	}
	switch t {
	case 4:
		if len(flat) == 0 {
			return nil, nil
		}
		return geom.NewMultiPointFlat(geom.XY, flat), nil
	case 5:
		if len(ends) == 0 {
			return nil, nil
		}
		return geom.NewMultiLineStringFlat(geom.XY, flat, ends), nil
	default:
		if len(endss) == 0 {
			return nil, nil
		}
		return geom.NewMultiPolygonFlat(geom.XY, flat, endss), nil
	}
}

func Finite(x, y float64) bool {
	return !math.IsNaN(x) && !math.IsNaN(y) && !math.IsInf(x, 0) && !math.IsInf(y, 0)
}
