package geodesic

import (
	"math"

	"github.com/twpayne/go-geom"
)

// The local method measures a small polygon without solving a geodesic
// problem per edge, in three steps that each keep areas or are exact:
//
//  1. The spheroid maps onto the authalic sphere (the sphere of the same
//     area) by authalic latitude ξ; the map keeps areas.
//  2. On that sphere, the polygon whose edges are great circles is a fan
//     of spherical triangles from a centre (the polygon's bounding-box
//     centre), each measured exactly by its spherical excess (Van
//     Oosterom and Strackee), in a frame turned so the centre lies on the
//     equator: every triangle is polygon-sized, so nothing is measured
//     from the equator and cancelled (GeographicLib's source of rounding).
//  3. The spheroid's geodesic between two vertices maps onto a curve that
//     is not quite the great circle between them; the area between the
//     two, to leading order, is added per edge (see curvature).
//
// Every coordinate difference is computed so that it keeps its relative
// precision: no difference of two nearly equal large numbers. What the
// method leaves out grows with the polygon's extent: within LocalMaxSpan
// it is below 5e-11 of the area (see local_test.go).

// LocalMaxSpan is the largest extent, in degrees of latitude and of
// longitude, of a polygon measured by the local method (about 1.1 km of
// latitude); larger ones go to GeographicLib.
const LocalMaxSpan = 0.01

// LocalMaxLat is the largest absolute latitude of a vertex measured by
// the local method: nearer the poles, GeographicLib.
const LocalMaxLat = 89.0

// authalic holds the constants of the map from geodetic to authalic
// latitude for one ellipsoid.
type authalic struct {
	a      float64 // semi-major axis
	e2, e  float64 // eccentricity squared, eccentricity
	qp     float64 // q at the pole
	hk     float64 // 2 (1 - e²) / qp
	rq2    float64 // the authalic radius squared
	usable bool
}

func newAuthalic(a, f float64) authalic {
	if !(a > 0) || !(f >= 0 && f < 1) {
		return authalic{}
	}
	e2 := f * (2 - f)
	e := math.Sqrt(e2)
	var qp float64
	if e == 0 {
		qp = 2
	} else {
		qp = (1 - e2) * (1/(1-e2) + math.Atanh(e)/e)
	}
	return authalic{a: a, e2: e2, e: e, qp: qp, hk: 2 * (1 - e2) / qp, rq2: a * a * qp / 2, usable: true}
}

// q is the authalic function of the sine of the geodetic latitude.
func (m *authalic) q(s float64) float64 {
	if m.e == 0 {
		return 2 * s
	}
	return (1 - m.e2) * (s/(1-m.e2*s*s) + math.Atanh(m.e*s)/m.e)
}

// sinSmall and omcSmall are sin x and 1 - cos x for |x| below 1e-3
// radians, to the last bit: the first omitted terms are below 1e-20 of
// the result.
func sinSmall(x float64) float64 {
	x2 := x * x
	return x * (1 - x2/6*(1-x2/20*(1-x2/42)))
}

func omcSmall(x float64) float64 {
	x2 := x * x
	return x2 / 2 * (1 - x2/12*(1-x2/30*(1-x2/56)))
}

// centre is the point a polygon is measured around: its longitude and
// latitude in degrees, the sine and cosine of its geodetic latitude and
// of its authalic latitude, and the coefficients of the edge correction.
type centre struct {
	lamDeg, phiDeg float64
	sp, cp         float64 // geodetic latitude
	s0, c0         float64 // authalic latitude
	kuuv, kvvv     float64
}

func (m *authalic) centre(lamDeg, phiDeg float64) centre {
	sp, cp := math.Sincos(phiDeg * math.Pi / 180)
	s0 := m.q(sp) / m.qp
	c0 := math.Sqrt(1 - s0*s0)
	c := centre{lamDeg: lamDeg, phiDeg: phiDeg, sp: sp, cp: cp, s0: s0, c0: c0}
	c.kuuv, c.kvvv = m.curvature(sp, cp, s0, c0)
	return c
}

// deltaSinXi returns sin ξ - sin ξ0 for a point dphi radians of geodetic
// latitude from the centre, with the relative precision of dphi. q is a
// function of t = sin φ whose derivative, h(t) = 2 (1 - e²) / (1 - e² t²)²,
// changes by less than e² over the sphere: its mean over [t0, t] is h at
// the midpoint plus h” (t - t0)² / 24, and the next term is below 1e-16
// of the result for |t - t0| < 1e-3.
func (m *authalic) deltaSinXi(c *centre, dphi float64) float64 {
	dt := c.cp*sinSmall(dphi) - c.sp*omcSmall(dphi) // sin φ - sin φ0
	tm := c.sp + dt/2
	e2t2 := m.e2 * tm * tm
	v := 1 / (1 - e2t2)
	// h = hk v², h'' = 4 e² hk v³ (1 + 6 e² t² v), hk = 2 (1 - e²) / qp.
	return dt * m.hk * v * v * (1 + m.e2*v*(1+6*e2t2*v)*dt*dt/6)
}

// localRing is one ring's signed area (counter-clockwise positive, seen
// from above with east to the right) by the local method; xy holds the
// ring, closing point included.
func (m *authalic) localRing(xy []float64, stride int, c *centre) float64 {
	const rad = math.Pi / 180
	n := len(xy) / stride
	if n < 4 {
		return 0
	}
	var excess, corr float64
	var px, py, pz, plam, pphi float64
	for i := 0; i < n; i++ {
		dlam := (xy[i*stride] - c.lamDeg) * rad
		dphi := (xy[i*stride+1] - c.phiDeg) * rad
		ds := m.deltaSinXi(c, dphi) // sin ξ - sin ξ0
		s := c.s0 + ds
		cx := math.Sqrt(1 - s*s)
		dc := -ds * (s + c.s0) / (cx + c.c0) // cos ξ - cos ξ0
		sinDxi := ds*c.c0 - dc*c.s0          // sin(ξ - ξ0)
		omc := omcSmall(dlam)
		// The vertex's unit vector on the authalic sphere, in the frame
		// whose x axis points at the centre, y east and z north: y and z
		// keep their relative precision; x, near 1, is needed only to
		// its absolute one.
		x := c.s0*s + c.c0*cx*(1-omc)
		y := cx * sinSmall(dlam)
		z := sinDxi + c.s0*cx*omc
		if i > 0 {
			// The signed spherical excess of the triangle (centre,
			// previous vertex, this vertex), Van Oosterom and Strackee's
			// tan(E/2) = det / den; E is below 1e-5, so atan is its
			// series to the third term.
			t := (py*z - pz*y) / (1 + px + x + px*x + py*y + pz*z)
			t2 := t * t
			excess += 2 * t * (1 - t2/3*(1-t2*3/5))
			el, ep := dlam-plam, dphi-pphi
			corr += el * (c.kuuv*ep*ep + c.kvvv*el*el)
		}
		px, py, pz, plam, pphi = x, y, z, dlam, dphi
	}
	return excess*m.rq2 - corr
}

// curvature returns the coefficients of the edge correction at a centre
// whose geodetic latitude has sine and cosine sp, cp and whose authalic
// latitude has sine and cosine s0, c0.
//
// The fan of triangles measures the polygon whose edges are great
// circles of the authalic sphere. The spheroid's geodesic between the
// same vertices maps onto a curve with a small geodesic curvature κ on
// that sphere (it is a geodesic of the spheroid's metric, not of the
// sphere's), and the area between it and the great circle is κ L³ / 12
// to leading order. In coordinates u = φ, v = λ both metrics are
// diagonal, E du² + G dv², and depend on φ alone; κ follows from the
// difference D of their Christoffel symbols, and with the edge's
// coordinate differences (Δφ, Δλ), κ L³ = √(E₂G₂) (3 δ Δφ² Δλ - D^u_vv Δλ³),
// where δ = D^v_uv = -D^u_uu. √(E₂G₂) = M N cos φ, the spheroid's area
// element, because the map to the authalic sphere keeps areas.
func (m *authalic) curvature(sp, cp, s0, c0 float64) (kuuv, kvvv float64) {
	w2 := 1 - m.e2*sp*sp
	w := math.Sqrt(w2)
	M := m.a * (1 - m.e2) / (w2 * w) // meridional radius of curvature
	N := m.a / w                     // prime vertical radius of curvature
	dlnN := m.e2 * sp * cp / w2      // d ln N / dφ
	tanp, tanx := sp/cp, s0/c0
	dxi := M * N * cp / (m.rq2 * c0) // dξ / dφ
	delta := tanp - dlnN - tanx*dxi
	E1, G1 := M*M, N*N*cp*cp
	E2, G2 := m.rq2*dxi*dxi, m.rq2*c0*c0
	dvv := G2*tanx*dxi/E2 - G1*(tanp-dlnN)/E1
	k := M * N * cp / 12
	return 3 * k * delta, -k * dvv
}

// localArea is Area by the local method, and false where the method is
// not used (see LocalMaxSpan, LocalMaxLat).
func (m *authalic) localArea(mp *geom.MultiPolygon) (float64, bool) {
	if !m.usable {
		return 0, false
	}
	flat := mp.FlatCoords()
	stride := mp.Stride()
	if len(flat) < stride {
		return 0, true
	}
	minX, maxX, minY, maxY := flat[0], flat[0], flat[1], flat[1]
	for i := 0; i+1 < len(flat); i += stride {
		x, y := flat[i], flat[i+1]
		if x != x || y != y {
			return 0, false // NaN: not in any range
		}
		if x < minX {
			minX = x
		} else if x > maxX {
			maxX = x
		}
		if y < minY {
			minY = y
		} else if y > maxY {
			maxY = y
		}
	}
	if !(maxX-minX <= LocalMaxSpan && maxY-minY <= LocalMaxSpan && minY >= -LocalMaxLat && maxY <= LocalMaxLat && minX >= -180 && maxX <= 180) {
		return 0, false
	}
	c := m.centre((minX+maxX)/2, (minY+maxY)/2)
	var area float64
	start := 0
	for _, ends := range mp.Endss() {
		var parea float64
		for k, end := range ends {
			a := math.Abs(m.localRing(flat[start:end], stride, &c))
			if k == 0 {
				parea += a
			} else {
				parea -= a
			}
			start = end
		}
		area += parea
	}
	return area, true
}
