package reportcells

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// Unit is one admin unit of a generation: its admin_units.id and
// geometry (EPSG:4326, WKB or EWKB).
type Unit struct {
	ID  int64
	WKB []byte
}

// Generation is an admin generation as the client computes against it:
// immutable once made, shared by every job and worker that uses it.
type Generation struct {
	// Name is the generation's name (report_admin_generations), and
	// UnitIDs its units' ids, sorted.
	Name    string
	UnitIDs []int64
	// Vertices is the number of the units' vertices (what the
	// generation's memory grows with).
	Vertices int

	units    []*unit // in id order
	coverage []byte  // the union of the units (WKB), nil when unknown
	cov      *unit   // the coverage's rings and grid; nil when not read
	index    boxIndex

	clipMu sync.Mutex
	clips  map[clipKey]*sharedClip

	stateMu sync.Mutex
	states  []*geosState // idle, for the next workers
	closed  bool
}

// maxIdleStates is how many idle GEOS states a generation keeps.
const maxIdleStates = 8

// take returns an idle GEOS state, or a new one.
func (g *Generation) take() *geosState {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	if n := len(g.states); n > 0 {
		s := g.states[n-1]
		g.states = g.states[:n-1]
		return s
	}
	return newGEOSState()
}

// put keeps a state for the next worker, or frees it.
func (g *Generation) put(s *geosState) {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	if g.closed || len(g.states) >= maxIdleStates {
		s.free()
		return
	}
	g.states = append(g.states, s)
}

// Close frees the generation's idle GEOS states; a state in use is
// freed when its worker closes. The generation stays usable (its next
// workers make new states, freed as they close).
func (g *Generation) Close() {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	g.closed = true
	for _, s := range g.states {
		s.free()
	}
	g.states = nil
}

// maxSharedClips bounds the clips a generation keeps (some kilobytes
// each); beyond it, clips are made per worker and not kept.
const maxSharedClips = 20000

// clip is the kept clip of square k, or nil.
func (g *Generation) clip(k clipKey) *sharedClip {
	g.clipMu.Lock()
	defer g.clipMu.Unlock()
	return g.clips[k]
}

// keepClip keeps sc as square k's clip unless one is kept already (or
// the generation keeps as many as it may), and returns the kept one.
func (g *Generation) keepClip(k clipKey, sc *sharedClip) *sharedClip {
	g.clipMu.Lock()
	defer g.clipMu.Unlock()
	if old := g.clips[k]; old != nil {
		return old
	}
	if g.clips == nil {
		g.clips = map[clipKey]*sharedClip{}
	}
	if len(g.clips) < maxSharedClips {
		g.clips[k] = sc
	}
	return sc
}

// unit is one unit's data and its interior grid, made on first use.
type unit struct {
	id          int64
	wkb         []byte
	box         box
	overlapping bool
	flat        []float64 // every ring's coordinates, XY
	rings       []int     // the end of each ring in flat (in float64s)
	clipSide    float64   // the side of its clips' squares, in degrees
	clipGrow    float64   // what a clip's box is grown by: the longest edge, and a margin
	gridOnce    sync.Once
	grid        *grid
}

// NewGeneration makes the generation name of units, of which overlapping
// (the units whose interior meets another's, migration 0015) are never
// settled by covering alone, with coverage the WKB of their union (nil
// when GEOS could not compute it). It fails on a unit that is not a
// polygon or multipolygon.
func NewGeneration(name string, units []Unit, overlapping []int64, coverage []byte) (*Generation, error) {
	g := &Generation{Name: name, coverage: coverage}
	ov := map[int64]bool{}
	for _, id := range overlapping {
		ov[id] = true
	}
	sorted := slices.Clone(units)
	slices.SortFunc(sorted, func(a, b Unit) int { return cmp.Compare(a.ID, b.ID) })
	if len(coverage) > 0 {
		// The union's grid settles most parcels' ST_Covers(coverage,
		// parcel) (worker.go); a union that is not read is tested by GEOS.
		if c, err := newUnit(0, coverage); err == nil {
			g.cov = c
		}
	}
	for _, u := range sorted {
		x, err := newUnit(u.ID, u.WKB)
		if err != nil {
			return nil, fmt.Errorf("admin unit %d: %w", u.ID, err)
		}
		x.overlapping = ov[u.ID]
		g.Vertices += len(x.flat) / 2
		g.units = append(g.units, x)
		g.UnitIDs = append(g.UnitIDs, u.ID)
	}
	boxes := make([]box, len(g.units))
	for i := range g.units {
		boxes[i] = g.units[i].box
	}
	g.index = newBoxIndex(boxes)
	return g, nil
}

// newUnit reads a unit (or the coverage) from its WKB: a polygon or a
// multipolygon.
func newUnit(id int64, b []byte) (*unit, error) {
	t, err := ewkb.Unmarshal(b) // WKB, or EWKB with an SRID
	if err != nil {
		return nil, err
	}
	x := &unit{id: id, wkb: b}
	switch t := t.(type) {
	case *geom.Polygon:
		x.addRings(t.FlatCoords(), 0, t.Ends(), t.Stride())
	case *geom.MultiPolygon:
		start := 0
		for _, ends := range t.Endss() {
			x.addRings(t.FlatCoords(), start, ends, t.Stride())
			if len(ends) > 0 {
				start = ends[len(ends)-1]
			}
		}
	default:
		return nil, fmt.Errorf("%T is not polygonal", t)
	}
	x.box = boundsXY(x.flat, 2)
	maxSeg := 0.0
	eachEdge(x.flat, x.rings, func(ax, ay, bx, by float64) {
		maxSeg = math.Max(maxSeg, math.Hypot(bx-ax, by-ay))
	})
	// Clips (clips.go): squares a sixteenth of the unit wide, each clip
	// grown by the longest edge.
	x.clipSide = math.Max(x.box.maxX-x.box.minX, x.box.maxY-x.box.minY) / clipSquares
	x.clipGrow = maxSeg*(1+1e-9) + 1e-12
	return x, nil
}

// addRings appends one polygon's rings to u: ends are go-geom's ring
// ends in flat (cumulative over the whole geometry), and the polygon's
// first ring begins at start. The closing point of each ring is left out.
func (u *unit) addRings(flat []float64, start int, ends []int, stride int) {
	begin := start
	for _, e := range ends {
		u.flat = appendRingXY(u.flat, flat[begin:e], stride)
		u.rings = append(u.rings, len(u.flat))
		begin = e
	}
}

// appendRingXY appends the XY of a ring's coordinates (ring, of stride,
// closed) to dst, without the closing point.
func appendRingXY(dst, ring []float64, stride int) []float64 {
	for i := 0; i+stride < len(ring); i += stride {
		dst = append(dst, ring[i], ring[i+1])
	}
	return dst
}

// boundsXY is the box of coordinates of stride; emptyBox for none.
func boundsXY(c []float64, stride int) box {
	if len(c) < 2 {
		return emptyBox()
	}
	b := box{c[0], c[1], c[0], c[1]}
	for i := stride; i+1 < len(c); i += stride {
		x, y := c[i], c[i+1]
		if x < b.minX {
			b.minX = x
		} else if x > b.maxX {
			b.maxX = x
		}
		if y < b.minY {
			b.minY = y
		} else if y > b.maxY {
			b.maxY = y
		}
	}
	return b
}

// box is a closed bounding box.
type box struct{ minX, minY, maxX, maxY float64 }

func emptyBox() box { return box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)} }

func (b *box) add(x, y float64) {
	b.minX, b.maxX = math.Min(b.minX, x), math.Max(b.maxX, x)
	b.minY, b.maxY = math.Min(b.minY, y), math.Max(b.maxY, y)
}

// meets is PostGIS's && of two boxes (closed: touching boxes meet).
func (b box) meets(o box) bool {
	return b.minX <= o.maxX && o.minX <= b.maxX && b.minY <= o.maxY && o.minY <= b.maxY
}

// contains is PostGIS's ~ (o within b, closed).
func (b box) contains(o box) bool {
	return b.minX <= o.minX && o.maxX <= b.maxX && b.minY <= o.minY && o.maxY <= b.maxY
}
