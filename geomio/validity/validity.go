// Package validity answers "is this polygon valid?" cheaply for the
// geometries where the answer can be proved by a few exact predicates, so
// that GEOS (what PostGIS's ST_IsValid runs) is asked only about the rest.
//
// Certain implements a sufficient condition, never a heuristic: when it
// returns true the geometry is valid in the OGC sense that GEOS's
// IsValidOp checks, and ST_IsValid would say true; when it returns false
// nothing is known and the caller must ask GEOS. The condition covers the
// common case of a parcel: one polygon, one ring, no holes, a few dozen
// vertices at most. For such a ring, validity is: finite coordinates, the
// ring closed, at least three distinct points, and the ring simple (no two
// edges meet except neighbours at their shared vertex, and neighbours do
// not fold back on each other). A simple closed ring bounds a region of
// positive area, so nothing else can make the polygon invalid.
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

// MaxVertices is the largest ring Certain examines: its pairwise edge test
// is quadratic, and beyond this size GEOS's sweep is the cheaper judge.
const MaxVertices = 64

// Certain reports whether g is certainly valid. It returns true only for
// a Polygon or a one-part MultiPolygon with a single ring (no holes) that
// is closed, has at least three distinct points, no more than MaxVertices
// vertices, finite coordinates, and is proved simple. Any other input,
// valid or not, gives false: ask GEOS.
func Certain(g geom.T) bool {
	var flat []float64
	var stride int
	switch t := g.(type) {
	case *geom.MultiPolygon:
		if t.NumPolygons() != 1 || len(t.Endss()[0]) != 1 {
			return false
		}
		flat, stride = t.FlatCoords(), t.Stride()
	case *geom.Polygon:
		if t.NumLinearRings() != 1 {
			return false
		}
		flat, stride = t.FlatCoords(), t.Stride()
	default:
		return false
	}
	return certainRing(flat, stride)
}

type pt struct{ x, y float64 }

// certainRing proves the closed ring in flat (stride values per point,
// X and Y first) simple, or returns false.
func certainRing(flat []float64, stride int) bool {
	if stride < 2 || len(flat)%stride != 0 {
		return false
	}
	n := len(flat) / stride
	if n < 4 || n > MaxVertices+1 {
		return false
	}
	var buf [MaxVertices + 1]pt
	ring := buf[:0]
	for i := 0; i < n; i++ {
		p := pt{flat[i*stride], flat[i*stride+1]}
		if !finite(p.x) || !finite(p.y) {
			return false
		}
		// Consecutive repeated points are allowed and ignored by GEOS.
		if len(ring) > 0 && ring[len(ring)-1] == p {
			continue
		}
		ring = append(ring, p)
	}
	first, last := pt{flat[0], flat[1]}, pt{flat[(n-1)*stride], flat[(n-1)*stride+1]}
	if first != last {
		return false // unclosed: PostGIS refuses to build it
	}
	// ring is closed (ring[0] == ring[m]) with m edges.
	m := len(ring) - 1
	if m < 3 {
		return false // fewer than three distinct points
	}
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
