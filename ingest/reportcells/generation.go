package reportcells

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
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
	maxSeg      float64   // the longest edge's length, in degrees
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
	slices.SortFunc(sorted, func(a, b Unit) int { return cmpInt(a.ID, b.ID) })
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
	t, err := wkb.Unmarshal(stripSRID(b))
	if err != nil {
		return nil, err
	}
	x := &unit{id: id, wkb: b, box: emptyBox()}
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
	eachEdge(x.flat, x.rings, func(ax, ay, bx, by float64) {
		x.maxSeg = math.Max(x.maxSeg, math.Hypot(bx-ax, by-ay))
	})
	return x, nil
}

// addRings appends one polygon's rings to u: ends are go-geom's ring
// ends in flat (cumulative over the whole geometry), and the polygon's
// first ring begins at start. The closing point of each ring is left out.
func (u *unit) addRings(flat []float64, start int, ends []int, stride int) {
	begin := start
	for _, e := range ends {
		for i := begin; i+stride < e; i += stride {
			u.flat = append(u.flat, flat[i], flat[i+1])
			u.box.add(flat[i], flat[i+1])
		}
		u.rings = append(u.rings, len(u.flat))
		begin = e
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stripSRID turns an EWKB with an SRID into plain WKB for go-geom's
// decoder (which refuses the flag); a plain WKB is returned as it is.
func stripSRID(b []byte) []byte {
	if len(b) < 9 {
		return b
	}
	le := b[0] == 1
	var t uint32
	if le {
		t = uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 | uint32(b[4])<<24
	} else {
		t = uint32(b[4]) | uint32(b[3])<<8 | uint32(b[2])<<16 | uint32(b[1])<<24
	}
	const sridFlag = 0x20000000
	if t&sridFlag == 0 {
		return b
	}
	t &^= sridFlag
	out := make([]byte, 0, len(b)-4)
	out = append(out, b[0])
	if le {
		out = append(out, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
	} else {
		out = append(out, byte(t>>24), byte(t>>16), byte(t>>8), byte(t))
	}
	return append(out, b[9:]...)
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
