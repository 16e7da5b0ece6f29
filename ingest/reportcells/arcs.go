package reportcells

import "math"

// The pieces of a boundary parcel are, for a parcel that is one ring
// with no holes (nearly every parcel), computed here without GEOS where
// the case is simple: a ring of the unit's cached clip (worker.go) that
// crosses the parcel's boundary exactly twice, properly. The piece is
// then the one polygon that ST_Intersection yields: the parcel's
// vertices from one crossing to the other that lie inside the ring, and
// the ring's vertices back that lie inside the parcel, every vertex of
// both kept, in order. Its area on the spheroid is therefore the same to
// within the rounding of the two crossing points. A ring that does not
// meet the parcel's boundary lies inside it, or holds it, or misses it.
// Every other case gives up (ok false) and is left to GEOS: more than two
// crossings (a piece in several parts), or a vertex of either on or
// within rounding of an edge of the other that it comes near (shared
// vertices and edges, touching).

// arcs holds the buffers of the piece rings; one per worker.
type arcs struct {
	out  []float64
	xs   []crossing
	near []int32 // r's edges that meet p's box
}

// crossing is where a parcel edge (pi, at pt along it) crosses a ring
// edge (ri, at rt along it).
type crossing struct {
	pi, ri int
	pt, rt float64
	x, y   float64
}

// Relations of a ring to a parcel, besides crossing it.
const (
	ringMisses  = iota // no common point
	ringInside         // the ring lies inside the parcel
	ringHolds          // the parcel lies inside the ring
	ringCrosses        // the piece is out
)

// arcEps is the relative size below which an orientation is taken as
// zero (a vertex on an edge's line): such cases go to GEOS.
const arcEps = 1e-11

// piece relates ring r to parcel p (both XY without closing points, pb
// p's box, rb r's box) and, when r crosses p's boundary twice, returns
// the ring of their intersection (without closing point; valid until the
// next call).
func (a *arcs) piece(p []float64, pb box, r []float64, rb box) (out []float64, rel int, ok bool) {
	n, m := len(p)/2, len(r)/2
	if n < 3 || m < 3 {
		return nil, 0, false
	}
	scale := math.Max(math.Max(pb.maxX-pb.minX, pb.maxY-pb.minY), 1e-300)
	pad := scale * 1e-9
	a.xs = a.xs[:0]
	a.near = a.near[:0]
	for j := 0; j < m; j++ {
		j2 := (j + 1) % m
		cx, cy, dx, dy := r[2*j], r[2*j+1], r[2*j2], r[2*j2+1]
		if math.Max(cx, dx)+pad < pb.minX || math.Min(cx, dx)-pad > pb.maxX ||
			math.Max(cy, dy)+pad < pb.minY || math.Min(cy, dy)-pad > pb.maxY {
			continue
		}
		a.near = append(a.near, int32(j))
	}
	for i := 0; i < n && len(a.near) > 0; i++ {
		i2 := (i + 1) % n
		ax, ay, bx, by := p[2*i], p[2*i+1], p[2*i2], p[2*i2+1]
		exMin, exMax := math.Min(ax, bx), math.Max(ax, bx)
		eyMin, eyMax := math.Min(ay, by), math.Max(ay, by)
		if exMax+pad < rb.minX || exMin-pad > rb.maxX || eyMax+pad < rb.minY || eyMin-pad > rb.maxY {
			continue
		}
		lab := math.Hypot(bx-ax, by-ay)
		for _, jj := range a.near {
			j := int(jj)
			j2 := (j + 1) % m
			cx, cy, dx, dy := r[2*j], r[2*j+1], r[2*j2], r[2*j2+1]
			if math.Max(cx, dx)+pad < exMin || math.Min(cx, dx)-pad > exMax ||
				math.Max(cy, dy)+pad < eyMin || math.Min(cy, dy)-pad > eyMax {
				continue
			}
			lcd := math.Hypot(dx-cx, dy-cy)
			o1, o2 := cross(ax, ay, bx, by, cx, cy), cross(ax, ay, bx, by, dx, dy)
			o3, o4 := cross(cx, cy, dx, dy, ax, ay), cross(cx, cy, dx, dy, bx, by)
			t1 := arcEps * lab * (scale + lcd)
			t2 := arcEps * lcd * (scale + lcd)
			if math.Abs(o1) <= t1 || math.Abs(o2) <= t1 || math.Abs(o3) <= t2 || math.Abs(o4) <= t2 {
				return nil, 0, false // a vertex on, or near, the other's edge
			}
			if (o1 > 0) != (o2 > 0) && (o3 > 0) != (o4 > 0) {
				if len(a.xs) == 2 {
					return nil, 0, false
				}
				t := o3 / (o3 - o4)
				a.xs = append(a.xs, crossing{pi: i, ri: j, pt: t, rt: o1 / (o1 - o2),
					x: ax + (bx-ax)*t, y: ay + (by-ay)*t})
			}
		}
	}
	switch len(a.xs) {
	case 0:
		switch {
		case inRing(r, p[0], p[1]):
			return nil, ringHolds, true
		case inRing(p, r[0], r[1]):
			return nil, ringInside, true
		}
		return nil, ringMisses, true
	case 2:
	default:
		return nil, 0, false // touching once cannot happen without a near vertex
	}
	// Order the crossings along p; the arc of p from s to e (forward)
	// is the one inside r.
	s, e := a.xs[0], a.xs[1]
	if e.pi < s.pi || (e.pi == s.pi && e.pt < s.pt) {
		s, e = e, s
	}
	if !pArcInside(p, r, s, e) {
		s, e = e, s
	}
	out = append(a.out[:0], s.x, s.y)
	// p's vertices forward from s to e.
	if !(e.pi == s.pi && e.pt > s.pt) {
		for k := (s.pi + 1) % n; ; k = (k + 1) % n {
			out = append(out, p[2*k], p[2*k+1])
			if k == e.pi {
				break
			}
		}
	}
	out = append(out, e.x, e.y)
	// r's vertices from e back to s, the way that runs inside p.
	if rArcForwardInside(r, p, e, s) {
		if !(s.ri == e.ri && s.rt > e.rt) {
			for k := (e.ri + 1) % m; ; k = (k + 1) % m {
				out = append(out, r[2*k], r[2*k+1])
				if k == s.ri {
					break
				}
			}
		}
	} else {
		if !(s.ri == e.ri && s.rt < e.rt) {
			for k := e.ri; ; k = (k - 1 + m) % m {
				out = append(out, r[2*k], r[2*k+1])
				if k == (s.ri+1)%m {
					break
				}
			}
		}
	}
	a.out = out
	return out, ringCrosses, true
}

// pArcInside reports whether p's boundary runs inside r just after s,
// going forward towards e.
func pArcInside(p, r []float64, s, e crossing) bool {
	n := len(p) / 2
	nx, ny := e.x, e.y
	if !(e.pi == s.pi && e.pt > s.pt) {
		k := (s.pi + 1) % n
		nx, ny = p[2*k], p[2*k+1]
	}
	return inRing(r, (s.x+nx)/2, (s.y+ny)/2)
}

// rArcForwardInside reports whether r's boundary runs inside p just
// after e, going forward.
func rArcForwardInside(r, p []float64, e, s crossing) bool {
	m := len(r) / 2
	nx, ny := s.x, s.y
	if !(s.ri == e.ri && s.rt > e.rt) {
		k := (e.ri + 1) % m
		nx, ny = r[2*k], r[2*k+1]
	}
	return inRing(p, (e.x+nx)/2, (e.y+ny)/2)
}

// inRing is the even-odd test of (x, y) against a ring (XY without its
// closing point).
func inRing(ring []float64, x, y float64) bool {
	in := false
	m := len(ring) / 2
	for i, j := 0, m-1; i < m; j, i = i, i+1 {
		xi, yi, xj, yj := ring[2*i], ring[2*i+1], ring[2*j], ring[2*j+1]
		if (yi > y) != (yj > y) && x < xj+(y-yj)*(xi-xj)/(yi-yj) {
			in = !in
		}
	}
	return in
}

// cross is the orientation of c against the line a->b: positive when c
// is to its left.
func cross(ax, ay, bx, by, cx, cy float64) float64 {
	return (bx-ax)*(cy-ay) - (by-ay)*(cx-ax)
}
