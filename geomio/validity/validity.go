// Package validity answers "is this polygon valid?" cheaply for the
// geometries where the answer can be proved by a few exact predicates, so
// that GEOS (what PostGIS's ST_IsValid runs) is asked only about the rest.
//
// Certain implements a sufficient condition, never a heuristic: when it
// returns true the geometry is valid in the OGC sense that GEOS's
// IsValidOp checks, and ST_IsValid would say true; when it returns false
// nothing is known and the caller must ask GEOS. The condition covers the
// common cases of a parcel, a few dozen vertices at most:
//
//   - one polygon, one ring. Validity is: finite coordinates, the ring
//     closed, at least three distinct points, and the ring simple (no two
//     edges meet except neighbours at their shared vertex, and neighbours
//     do not fold back on each other). A simple closed ring bounds a
//     region of positive area, so nothing else can make it invalid.
//   - holes, and several polygons: every ring as above, no two rings
//     meeting at all (not even at a point), every hole inside its shell,
//     no hole inside another, and no polygon's shell inside another's.
//     With the boundaries apart, one vertex decides each of those
//     containments (a certified crossing count), and the interiors are
//     then connected and apart, which is all OGC validity asks beyond the
//     rings themselves.
//
// Every orientation sign it relies on is certified with Shewchuk's error
// bound for the floating-point orientation determinant: a sign that the
// bound cannot certify (collinear or nearly collinear points) makes the
// answer "unknown", not a guess.
package validity

import (
	"math"

	"github.com/twpayne/go-geom"
)

// MaxVertices is the largest number of vertices Certain examines in one
// geometry: its pairwise edge tests are quadratic, and beyond this size
// GEOS's sweep is the cheaper judge.
const MaxVertices = 64

// Certain reports whether g, a Polygon or a MultiPolygon, is certainly
// valid (see the package comment for what it proves). Any other input,
// valid or not, gives false: ask GEOS.
func Certain(g geom.T) bool {
	switch t := g.(type) {
	case *geom.MultiPolygon:
		endss := t.Endss()
		if len(endss) == 1 && len(endss[0]) == 1 {
			return certainRing(t.FlatCoords(), t.Stride())
		}
		return certainParts(t.FlatCoords(), endss, t.Stride())
	case *geom.Polygon:
		if t.NumLinearRings() == 1 {
			return certainRing(t.FlatCoords(), t.Stride())
		}
		return certainParts(t.FlatCoords(), [][]int{t.Ends()}, t.Stride())
	default:
		return false
	}
}

type pt struct{ x, y float64 }

// certainRing proves the closed ring in flat (stride values per point,
// X and Y first) simple, or returns false.
func certainRing(flat []float64, stride int) bool {
	var buf [MaxVertices + 1]pt
	ring, ok := loadRing(flat, stride, buf[:0])
	return ok && simple(ring)
}

// loadRing appends the ring in flat to ring without its consecutive
// repeated points (GEOS ignores them), or returns false for a ring that
// cannot be proved valid: fewer than four points or more than
// MaxVertices+1, a coordinate that is not finite, not closed, fewer than
// three distinct points.
func loadRing(flat []float64, stride int, ring []pt) ([]pt, bool) {
	if stride < 2 || len(flat)%stride != 0 {
		return nil, false
	}
	n := len(flat) / stride
	if n < 4 || n > MaxVertices+1 {
		return nil, false
	}
	start := len(ring)
	for i := 0; i < n; i++ {
		p := pt{flat[i*stride], flat[i*stride+1]}
		if !finite(p.x) || !finite(p.y) {
			return nil, false
		}
		if len(ring) > start && ring[len(ring)-1] == p {
			continue
		}
		ring = append(ring, p)
	}
	first, last := pt{flat[0], flat[1]}, pt{flat[(n-1)*stride], flat[(n-1)*stride+1]}
	if first != last {
		return nil, false // unclosed: PostGIS refuses to build it
	}
	if len(ring)-start-1 < 3 {
		return nil, false // fewer than three distinct points
	}
	return ring, true
}

// simple proves the closed ring (ring[0] == ring[m], m edges) simple.
func simple(ring []pt) bool {
	m := len(ring) - 1
	// Neighbouring edges (a,b),(b,c) meet only at b when a, b, c are
	// certainly not collinear: then they cannot overlap.
	for i := 0; i < m; i++ {
		a, b := ring[(i+m-1)%m], ring[i]
		c := ring[i+1]
		if orient(a, b, c) == 0 {
			return false
		}
	}
	// Every pair of non-neighbouring edges is certainly disjoint.
	for i := 0; i < m; i++ {
		p1, p2 := ring[i], ring[i+1]
		for j := i + 2; j < m; j++ {
			if i == 0 && j == m-1 {
				continue // the first and the last edge share ring[0]
			}
			if !disjoint(p1, p2, ring[j], ring[j+1]) {
				return false
			}
		}
	}
	return true
}

// certainParts proves valid the polygons whose rings endss gives (shell
// first, then holes, polygon after polygon) over flat.
func certainParts(flat []float64, endss [][]int, stride int) bool {
	if stride < 2 || len(flat)/stride > MaxVertices+8 {
		return false
	}
	var buf [MaxVertices + 8]pt
	var ringBuf [MaxVertices / 3]ringRef
	pts, rings := buf[:0], ringBuf[:0]
	start := 0
	for p, ends := range endss {
		if len(ends) == 0 {
			return false // an empty part: leave it to GEOS
		}
		for k, end := range ends {
			if len(rings) == cap(rings) {
				return false
			}
			from := len(pts)
			var ok bool
			if pts, ok = loadRing(flat[start:end], stride, pts); !ok {
				return false
			}
			if !simple(pts[from:]) {
				return false
			}
			rings = append(rings, ringRef{part: p, shell: k == 0, from: from, to: len(pts)})
			start = end
		}
	}
	// No two rings meet, anywhere.
	for i := range rings {
		a := pts[rings[i].from:rings[i].to]
		for j := i + 1; j < len(rings); j++ {
			b := pts[rings[j].from:rings[j].to]
			if !ringsApart(a, b) {
				return false
			}
		}
	}
	// Containment, decided by one vertex each now that the boundaries
	// are apart: a hole inside its shell and outside its polygon's other
	// holes; a shell outside every other polygon's shell.
	for i, r := range rings {
		first := pts[r.from]
		for j, q := range rings {
			if i == j {
				continue
			}
			other := pts[q.from:q.to]
			var want int
			switch {
			case r.part == q.part && !r.shell && q.shell:
				want = inside // a hole in its own shell
			case r.part == q.part && !r.shell && !q.shell:
				want = outside // not in a sibling hole
			case r.part != q.part && r.shell && q.shell:
				want = outside // shells apart
			default:
				continue
			}
			if locate(first, other) != want {
				return false
			}
		}
	}
	return true
}

// ringRef is one ring of certainParts: its polygon, whether it is that
// polygon's shell, and its points.
type ringRef struct {
	part     int
	shell    bool
	from, to int
}

// ringsApart reports whether no edge of ring a certainly meets an edge
// of ring b.
func ringsApart(a, b []pt) bool {
	for i := 0; i+1 < len(a); i++ {
		for j := 0; j+1 < len(b); j++ {
			if !disjoint(a[i], a[i+1], b[j], b[j+1]) {
				return false
			}
		}
	}
	return true
}

// Where locate finds a point.
const (
	unknown = iota
	inside
	outside
)

// locate returns whether p is certainly inside or outside the closed
// ring, by counting the ring's edges that cross the ray from p towards
// +x: which edges straddle p's y is exact, and on which side of each the
// point lies is a certified orientation; a sign it cannot certify (p on
// or very near an edge) gives unknown.
func locate(p pt, ring []pt) int {
	crossings := 0
	for i := 0; i+1 < len(ring); i++ {
		a, b := ring[i], ring[i+1]
		if (a.y > p.y) == (b.y > p.y) {
			continue
		}
		s := orient(a, b, p)
		if s == 0 {
			return unknown
		}
		// Going up (b above a), the crossing is right of p when p is left
		// of the edge (counter-clockwise); going down, when it is right.
		if (b.y > a.y) == (s > 0) {
			crossings++
		}
	}
	if crossings%2 == 1 {
		return inside
	}
	return outside
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// disjoint reports whether the closed segments p1p2 and p3p4 certainly do
// not meet: their bounding boxes are apart, or one segment lies strictly
// on one side of the other's line (both signs certain and equal).
func disjoint(p1, p2, p3, p4 pt) bool {
	if math.Max(p1.x, p2.x) < math.Min(p3.x, p4.x) || math.Max(p3.x, p4.x) < math.Min(p1.x, p2.x) ||
		math.Max(p1.y, p2.y) < math.Min(p3.y, p4.y) || math.Max(p3.y, p4.y) < math.Min(p1.y, p2.y) {
		return true
	}
	if s3, s4 := orient(p1, p2, p3), orient(p1, p2, p4); s3 != 0 && s3 == s4 {
		return true
	}
	if s1, s2 := orient(p3, p4, p1), orient(p3, p4, p2); s1 != 0 && s1 == s2 {
		return true
	}
	return false
}

// ccwErrBoundA is Shewchuk's bound on the error of the floating-point
// orientation determinant, relative to the sum of its terms' magnitudes
// ("Adaptive Precision Floating-Point Arithmetic and Fast Robust
// Geometric Predicates", 1997): (3 + 16ε)ε with ε = 2^-53.
const ccwErrBoundA = (3.0 + 16.0*epsilon) * epsilon

const epsilon = 1.0 / (1 << 53)

// tiny is below where the products could have lost bits to underflow,
// which the error bound does not account for.
const tiny = 1e-280

// orient returns the certain sign of the orientation of (a, b, c): +1
// counter-clockwise, -1 clockwise, 0 when the sign cannot be certified
// (collinear, nearly so, or at the edge of the floating-point range).
func orient(a, b, c pt) int {
	detLeft := (a.x - c.x) * (b.y - c.y)
	detRight := (a.y - c.y) * (b.x - c.x)
	det := detLeft - detRight
	sum := math.Abs(detLeft) + math.Abs(detRight)
	if sum < tiny || math.IsInf(sum, 0) || math.IsNaN(det) {
		return 0
	}
	if det > ccwErrBoundA*sum {
		return 1
	}
	if -det > ccwErrBoundA*sum {
		return -1
	}
	return 0
}
