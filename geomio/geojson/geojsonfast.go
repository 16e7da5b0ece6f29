package geojson

import (
	"bytes"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/jsonscan"
	"github.com/twpayne/go-geom"
)

// fastDecoder decodes one GeoJSON Feature (or, in a sequence, a bare
// geometry) in a single pass over its bytes, building the go-geom geometry
// and the compacted properties directly, with a handful of allocations.
//
// It is an accelerator, not a second definition of GeoJSON: it succeeds
// only on input it decodes exactly as the reference path (encoding/json,
// orb's geojson, fromOrb and compactObject; see decodeFeature) does, and
// returns ok == false on anything else (an error, a GeometryCollection,
// escaped or case-folded member names, duplicate members, nulls inside
// coordinates, ...), for the caller to decode the same bytes with the
// reference path, which then gives the result or the error.
//
// A fastDecoder holds scratch buffers; it is not safe for concurrent use.
type fastDecoder struct {
	skip jsonscan.JsonSkipper
	raw  *core.RawHasher // the features' raw hashes (rawHasher)
	Flat []float64       // coordinates of the geometry being parsed
	ends []int           // end (in flat) of each ring or line
	regs []int           // end (in ends) of each polygon

	// lim are the reader's limits (zero: none): parsing stops at the
	// position after MaxVertices, over then the limit's error. (The
	// properties are bounded by the feature's bytes while they are
	// decoded, and checked against their limits once they are, by
	// Open's Reader.)
	Lim  core.Limits
	Over *core.LimitError
	// zm: a position of the feature being parsed had more than two
	// numbers (an altitude), which were dropped.
	zm bool
	// id is the feature's "id" member (featureID), nil for none.
	id []byte
}

// geomType is a GeoJSON geometry type the fast path builds.
type geomType int

const (
	gNone geomType = iota
	gPoint
	gMultiPoint
	gLineString
	gMultiLineString
	gPolygon
	gMultiPolygon
)

// member bits, to refuse duplicate members.
const (
	mType = 1 << iota
	mGeometry
	mProperties
	mCoordinates
	mGeometries
	mID
)

// foldsTo reports whether key, which is not exactly one of names, would
// still be matched to one of them by encoding/json (which matches member
// names case-insensitively, with Unicode case folding).
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// key reads the member name at b[i] (a string without escapes) and the
// colon after it, and returns the name and the index of the value.
func (d *fastDecoder) key(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	end, esc := jsonscan.ScanString(b, i)
	if end < 0 || esc {
		return nil, -1
	}
	k := b[i+1 : end-1]
	i = jsonscan.SkipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, -1
	}
	return k, jsonscan.SkipSpace(b, i+1)
}

// next reads what follows a member's value: a comma (more members: true)
// or the closing brace (false); i is -1 on anything else.
func next(b []byte, i int) (int, bool) {
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case ',':
		return jsonscan.SkipSpace(b, i+1), true
	case '}':
		return i + 1, false
	}
	return -1, false
}

// Feature decodes raw, one element of a FeatureCollection's features
// array (seq false) or one record of a GeoJSON sequence (seq true: a
// Feature or a bare geometry, with whitespace around it), as decodeFeature
// and decodeSeqRecord would, before the SRID is set and the coordinates
// checked. ok is false when the reference path must decide.
//
// When the feature has more vertices than d.lim allows, ok is false and
// over is set: it must not be decoded.
func (d *fastDecoder) Feature(raw []byte, seq bool) (g geom.T, props []byte, ok bool) {
	d.Over, d.zm, d.id = nil, false, nil
	b := raw
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, false
	}
	i = jsonscan.SkipSpace(b, i+1)
	var (
		seen               int
		typ                []byte
		hasGeom            bool
		propStart, propEnd = -1, -1
		propSpace          bool
	)
	more := i < len(b) && b[i] != '}'
	if !more {
		i++
	}
	for more {
		var k []byte
		if k, i = d.key(b, i); i < 0 {
			return nil, nil, false
		}
		var bit int
		switch string(k) {
		case "type":
			bit = mType
			if i >= len(b) || b[i] != '"' {
				return nil, nil, false
			}
			end, esc := jsonscan.ScanString(b, i)
			if end < 0 || esc {
				return nil, nil, false
			}
			typ, i = b[i+1:end-1], end
		case "geometry":
			bit = mGeometry
			if i < len(b) && b[i] == 'n' {
				i = jsonscan.ScanLiteral(b, i, "null")
				break
			}
			if i >= len(b) || b[i] != '{' {
				return nil, nil, false
			}
			var gok bool
			if g, i, gok = d.geometry(b, i); !gok {
				return nil, nil, false
			}
			hasGeom = true
		case "properties":
			bit = mProperties
			propStart = i
			d.skip.Space = false
			i = d.skip.Value(b, i, 1)
			propEnd, propSpace = i, d.skip.Space
		case "id":
			bit = mID
			start := i
			i = d.skip.Value(b, i, 1)
			if i >= 0 {
				d.id = featureID(b[start:i])
			}
		case "coordinates", "geometries":
			if !seq {
				i = d.skip.Value(b, i, 1) // not a Feature member: ignored
				break
			}
			if string(k) == "geometries" {
				return nil, nil, false // a GeometryCollection record
			}
			bit = mCoordinates
			i = d.skip.Value(b, i, 1)
		default:
			if foldsTo(k, "type", "geometry", "properties", "id") || seq && foldsTo(k, "coordinates", "geometries") {
				return nil, nil, false
			}
			i = d.skip.Value(b, i, 1)
		}
		if i < 0 || seen&bit != 0 {
			return nil, nil, false
		}
		seen |= bit
		if i, more = next(b, i); i < 0 {
			return nil, nil, false
		}
	}
	if jsonscan.SkipSpace(b, i) != len(b) || (!seq && i != len(b)) {
		return nil, nil, false
	}
	switch string(typ) {
	case "Feature":
	case "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon":
		if !seq {
			return nil, nil, false
		}
		// A bare geometry record: the record is the geometry, and has
		// no properties.
		var gok bool
		start := jsonscan.SkipSpace(b, 0)
		if g, _, gok = d.geometry(b, start); !gok {
			return nil, nil, false
		}
		return g, []byte("{}"), true
	default:
		return nil, nil, false
	}
	if !hasGeom {
		g = nil
	}
	switch {
	case propStart < 0 || b[propStart] == 'n':
		props = []byte("{}")
	case b[propStart] == '{':
		if propSpace {
			props = jsonscan.AppendCompact(make([]byte, 0, propEnd-propStart), b[propStart:propEnd])
		} else {
			props = append([]byte(nil), b[propStart:propEnd]...)
		}
	default:
		return nil, nil, false
	}
	return g, props, true
}

// geometry parses the GeoJSON geometry object at b[i] and returns it as
// fromOrb builds it (XY, Polygon promoted to MultiPolygon, empty parts
// dropped, nil if empty), without the SRID.
func (d *fastDecoder) geometry(b []byte, i int) (geom.T, int, bool) {
	i = jsonscan.SkipSpace(b, i+1) // past '{'
	var (
		seen   int
		typ    geomType
		cStart = -1
		parsed bool
	)
	d.Flat, d.ends, d.regs = d.Flat[:0], d.ends[:0], d.regs[:0]
	more := i < len(b) && b[i] != '}'
	if !more {
		i++
	}
	for more {
		var k []byte
		if k, i = d.key(b, i); i < 0 {
			return nil, -1, false
		}
		var bit int
		switch string(k) {
		case "type":
			bit = mType
			if i >= len(b) || b[i] != '"' {
				return nil, -1, false
			}
			end, esc := jsonscan.ScanString(b, i)
			if end < 0 || esc {
				return nil, -1, false
			}
			switch string(b[i+1 : end-1]) {
			case "Point":
				typ = gPoint
			case "MultiPoint":
				typ = gMultiPoint
			case "LineString":
				typ = gLineString
			case "MultiLineString":
				typ = gMultiLineString
			case "Polygon":
				typ = gPolygon
			case "MultiPolygon":
				typ = gMultiPolygon
			default:
				return nil, -1, false
			}
			i = end
		case "coordinates":
			bit = mCoordinates
			cStart = i
			if typ != gNone {
				i = d.coordinates(b, i, typ)
				parsed = true
			} else {
				i = d.skip.Value(b, i, 2)
			}
		default:
			// geometries (parsed by orb even for a non-collection) and
			// names encoding/json would fold to a known one are left to
			// the reference path.
			if foldsTo(k, "type", "coordinates", "geometries") {
				return nil, -1, false
			}
			i = d.skip.Value(b, i, 2)
		}
		if i < 0 || seen&bit != 0 {
			return nil, -1, false
		}
		seen |= bit
		if i, more = next(b, i); i < 0 {
			return nil, -1, false
		}
	}
	if typ == gNone || cStart < 0 {
		return nil, -1, false
	}
	if !parsed {
		if d.coordinates(b, cStart, typ) < 0 {
			return nil, -1, false
		}
	}
	g, ok := d.build(typ)
	d.shrink()
	return g, i, ok
}

// coordinates parses the coordinates member of a geometry of type typ at
// b[i] into d.flat, d.ends and d.regs.
func (d *fastDecoder) coordinates(b []byte, i int, typ geomType) int {
	switch typ {
	case gPoint:
		return d.position(b, i)
	case gMultiPoint, gLineString:
		return d.positions(b, i)
	case gMultiLineString, gPolygon:
		return d.rings(b, i)
	case gMultiPolygon:
		return d.array(b, i, func(j int) int {
			j = d.rings(b, j)
			d.regs = append(d.regs, len(d.ends))
			return j
		})
	}
	return -1
}

// array parses a JSON array at b[i] whose elements elem parses.
func (d *fastDecoder) array(b []byte, i int, elem func(int) int) int {
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = elem(i); i < 0 {
			return -1
		}
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// rings parses an array of arrays of positions, ending each in d.ends.
func (d *fastDecoder) rings(b []byte, i int) int {
	return d.array(b, i, func(j int) int {
		j = d.positions(b, j)
		d.ends = append(d.ends, len(d.Flat))
		return j
	})
}

// positions parses an array of positions.
func (d *fastDecoder) positions(b []byte, i int) int {
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = d.position(b, i); i < 0 {
			return -1
		}
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// position parses a position of at least two numbers into d.flat; like
// encoding/json decoding into orb.Point ([2]float64), it ignores any
// further elements.
func (d *fastDecoder) position(b []byte, i int) int {
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	x, i := jsonscan.ParseNumber(b, i)
	if i < 0 {
		return -1
	}
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) || b[i] != ',' {
		return -1
	}
	y, i := jsonscan.ParseNumber(b, jsonscan.SkipSpace(b, i+1))
	if i < 0 {
		return -1
	}
	d.Flat = append(d.Flat, x, y)
	if d.Lim.MaxVertices > 0 && int64(len(d.Flat)) > 2*d.Lim.MaxVertices {
		d.Over = core.OverLimit(core.LimitVertices, d.Lim.MaxVertices, "more than %d vertices")
		return -1
	}
	for {
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			d.zm = true // an altitude (or more): dropped
			if i = d.skip.Value(b, jsonscan.SkipSpace(b, i+1), 3); i < 0 {
				return -1
			}
		default:
			return -1
		}
	}
}

// keepScratch is the most coordinates a decoder keeps its buffer for
// between features: the buffer of a larger feature is let go once its
// geometry is built, so that one huge feature does not stay in memory, as
// scratch, while it is written.
const keepScratch = 1 << 16

// shrink lets go of scratch buffers grown past keepScratch.
func (d *fastDecoder) shrink() {
	if cap(d.Flat) > 2*keepScratch {
		d.Flat = nil
	}
	if cap(d.ends) > keepScratch {
		d.ends, d.regs = nil, nil
	}
}

// build makes the go-geom geometry from what coordinates parsed, with the
// rules of orbToGeom and polygonsToGeom. ok is false for a polygon ring
// that is not a linear ring (the reference path words the error).
func (d *fastDecoder) build(typ geomType) (geom.T, bool) {
	flat := d.Flat
	switch typ {
	case gPoint:
		return geom.NewPointFlat(geom.XY, []float64{flat[0], flat[1]}), true
	case gMultiPoint:
		if len(flat) == 0 {
			return nil, true
		}
		return geom.NewMultiPointFlat(geom.XY, d.takeFlat()), true
	case gLineString:
		if len(flat) == 0 {
			return nil, true
		}
		return geom.NewLineStringFlat(geom.XY, d.takeFlat()), true
	case gMultiLineString:
		if len(flat) == 0 {
			return nil, true // every line is empty
		}
		ends := make([]int, 0, len(d.ends))
		prev := 0
		for _, e := range d.ends {
			if e > prev {
				ends = append(ends, e)
			}
			prev = e
		}
		return geom.NewMultiLineStringFlat(geom.XY, d.takeFlat(), ends), true
	case gPolygon:
		d.regs = append(d.regs[:0], len(d.ends))
		fallthrough
	case gMultiPolygon:
		return d.Polygons()
	}
	return nil, false
}

// Polygons builds a MultiPolygon from the rings in d.ends grouped by
// d.regs, as polygonsToGeom does: a polygon with no rings or an empty
// exterior ring is dropped, empty rings are dropped, and any other ring
// must have at least four positions and be closed.
func (d *fastDecoder) Polygons() (geom.T, bool) {
	var out []float64
	handed := false
	var endsAll []int
	var endss [][]int
	ring0, start := 0, 0 // first ring of the polygon; start of ring in d.flat
	for _, r := range d.regs {
		rings := d.ends[ring0:r]
		ring0 = r
		pstart := start
		if len(rings) > 0 {
			start = rings[len(rings)-1]
		}
		if len(rings) == 0 || rings[0] == pstart {
			continue // no rings, or an empty exterior ring
		}
		if out == nil {
			if cap(d.Flat) > 2*keepScratch {
				// A large geometry is compacted in place, and the
				// buffer given to it (rings only move towards its
				// start, so none is overwritten before it is read).
				out, handed = d.Flat[:0], true
			} else {
				out = make([]float64, 0, len(d.Flat)-pstart)
			}
			endsAll = make([]int, 0, len(d.ends))
		}
		first := len(endsAll)
		s := pstart
		for _, e := range rings {
			ring := d.Flat[s:e]
			s = e
			if len(ring) == 0 {
				continue
			}
			if len(ring) < 8 || ring[0] != ring[len(ring)-2] || ring[1] != ring[len(ring)-1] {
				return nil, false
			}
			out = append(out, ring...)
			endsAll = append(endsAll, len(out))
		}
		endss = append(endss, endsAll[first:len(endsAll):len(endsAll)])
	}
	if len(endss) == 0 {
		return nil, true
	}
	if handed {
		d.Flat = nil
		out = out[:len(out):len(out)]
	}
	return geom.NewMultiPolygonFlat(geom.XY, out, endss), true
}

// takeFlat returns the coordinates parsed, as a slice of their own: a
// copy, or for a large geometry the buffer itself, which the decoder then
// lets go.
func (d *fastDecoder) takeFlat() []float64 {
	if cap(d.Flat) > 2*keepScratch {
		f := d.Flat[:len(d.Flat):len(d.Flat)]
		d.Flat = nil
		return f
	}
	return append([]float64(nil), d.Flat...)
}

// rawHasher is d's hasher of raw features under the limits l, which are
// one reader's for the decoder's life.
func (d *fastDecoder) rawHasher(l core.Limits) *core.RawHasher {
	if d.raw == nil {
		d.raw = core.NewRawHasher(l)
	}
	return d.raw
}
