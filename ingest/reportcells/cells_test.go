package reportcells

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/overlay"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// wigglyRing is a closed ring around (cx, cy): n vertices at radii that
// vary, so the ring is simple (star-shaped) and often concave.
func wigglyRing(r *rand.Rand, cx, cy, radius float64, n int) []float64 {
	flat := make([]float64, 0, 2*n+2)
	for k := 0; k < n; k++ {
		a := 2 * math.Pi * float64(k) / float64(n)
		rr := radius * (0.5 + r.Float64())
		flat = append(flat, cx+rr*math.Cos(a), cy+rr*math.Sin(a))
	}
	return append(flat, flat[0], flat[1])
}

func polyWKB(t *testing.T, rings ...[]float64) ([]byte, *geom.Polygon) {
	t.Helper()
	var flat []float64
	var ends []int
	for _, r := range rings {
		flat = append(flat, r...)
		ends = append(ends, len(flat))
	}
	p := geom.NewPolygonFlat(geom.XY, flat, ends)
	b, err := wkb.Marshal(p, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}

// TestGridAgainstGEOS: a box the grid calls interior is covered by the
// unit, one it calls exterior is disjoint from it (GEOS's verdicts), on
// random concave units with holes and random boxes of every size,
// including boxes on the unit's boundary.
func TestGridAgainstGEOS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := overlay.New()
	defer c.Close()
	decided := 0
	for it := 0; it < 40; it++ {
		cx, cy := -170+340*r.Float64(), -80+160*r.Float64()
		radius := math.Pow(10, -3+3*r.Float64())
		shell := wigglyRing(r, cx, cy, radius, 3+r.IntN(300))
		hole := wigglyRing(r, cx, cy, radius*0.2, 3+r.IntN(20))
		b, _ := polyWKB(t, shell, hole)
		u, err := newUnit(1, b)
		if err != nil {
			t.Fatal(err)
		}
		ug, err := c.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		up, err := c.Prepare(ug)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 300; k++ {
			x := u.box.minX + (u.box.maxX-u.box.minX)*(r.Float64()*1.2-0.1)
			y := u.box.minY + (u.box.maxY-u.box.minY)*(r.Float64()*1.2-0.1)
			if k%10 == 0 { // on a vertex
				v := r.IntN(len(u.flat) / 2)
				x, y = u.flat[2*v], u.flat[2*v+1]
			}
			s := radius * math.Pow(10, -4+3*r.Float64())
			bx := box{x, y, x + s*r.Float64(), y + s*r.Float64()}
			verdict := u.classify(bx)
			if verdict == boundary {
				continue
			}
			decided++
			bw, _ := polyWKB(t, []float64{bx.minX, bx.minY, bx.maxX, bx.minY, bx.maxX, bx.maxY, bx.minX, bx.maxY, bx.minX, bx.minY})
			bg, err := c.Read(bw)
			if err != nil {
				t.Fatal(err)
			}
			covers, err1 := c.Covers(up, bg)
			meets, err2 := c.Intersects(up, bg)
			c.Free(bg)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if verdict == interior && !covers {
				t.Fatalf("unit %d box %+v: grid says inside, GEOS says not covered", it, bx)
			}
			if verdict == exterior && meets {
				t.Fatalf("unit %d box %+v: grid says outside, GEOS says it meets", it, bx)
			}
		}
		c.FreePrepared(up)
		c.Free(ug)
	}
	if decided < 5000 {
		t.Fatalf("the grid decided only %d boxes", decided)
	}
}

// TestArcsAgainstGEOS: where arcs.piece computes a piece, its area on
// the spheroid is ST_Area(ST_Intersection(ring, parcel)::geography)'s
// (GEOS's intersection) to within geodesic's tolerance, and it is zero
// exactly when GEOS's is, on random concave rings and parcels, including
// parcels that share vertices with the ring.
func TestArcsAgainstGEOS(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := overlay.New()
	defer c.Close()
	var a arcs
	computed, crossing := 0, 0
	for it := 0; it < 4000; it++ {
		cx, cy := -170+340*r.Float64(), -60+120*r.Float64()
		radius := 0.001 * (0.2 + r.Float64())
		ringFlat := wigglyRing(r, cx, cy, radius*5, 3+r.IntN(60))
		px := cx + radius*5*(r.Float64()*2-1)
		py := cy + radius*5*(r.Float64()*2-1)
		parcelFlat := wigglyRing(r, px, py, radius, 3+r.IntN(12))
		if it%7 == 0 { // a parcel that shares a vertex with the ring
			v := r.IntN(len(ringFlat)/2 - 1)
			parcelFlat[0], parcelFlat[1] = ringFlat[2*v], ringFlat[2*v+1]
			parcelFlat[len(parcelFlat)-2], parcelFlat[len(parcelFlat)-1] = ringFlat[2*v], ringFlat[2*v+1]
		}
		rel, ok, _ := checkPiece(t, c, &a, ringFlat, parcelFlat)
		if ok {
			computed++
			if rel == ringCrosses {
				crossing++
			}
		}
	}
	if computed < 2000 || crossing < 500 {
		t.Fatalf("only %d pieces computed, %d across the boundary", computed, crossing)
	}
}

// checkPiece compares arcs.piece of parcel against ring (both closed
// rings, XY) with GEOS's ST_Intersection, measured on the spheroid: the
// same area to within geodesic's tolerance, and zero exactly when GEOS's
// is. It returns whether arcs computed it (and the relation), and
// skipped for inputs GEOS cannot use (an invalid parcel).
func checkPiece(t *testing.T, c *overlay.Context, a *arcs, ringFlat, parcelFlat []float64) (rel int, computed, skipped bool) {
	t.Helper()
	rb, _ := polyWKB(t, ringFlat)
	pb, pp := polyWKB(t, parcelFlat)
	rg, err := c.Read(rb)
	if err != nil {
		return 0, false, true
	}
	defer c.Free(rg)
	pg, err := c.Read(pb)
	if err != nil {
		return 0, false, true
	}
	defer c.Free(pg)
	if ok, _ := c.Valid(pg); !ok {
		return 0, false, true
	}
	x, err := c.Intersection(rg, pg)
	if err != nil {
		return 0, false, true
	}
	out, err := c.AppendWKB(nil, x)
	c.Free(x)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := wkb.Unmarshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var w Worker
	want, err := w.areaOf(tg)
	if err != nil {
		t.Fatal(err)
	}
	var sc geodesic.Scratch
	ring, parcel := ringFlat[:len(ringFlat)-2], parcelFlat[:len(parcelFlat)-2]
	got, rel, ok := a.piece(parcel, ringBox(parcel), ring, ringBox(ring))
	if !ok {
		return rel, false, false
	}
	var area float64
	switch rel {
	case ringHolds:
		mp := geom.NewMultiPolygon(geom.XY)
		if err := mp.Push(pp); err != nil {
			t.Fatal(err)
		}
		area, _ = geodesic.Area(mp, &sc)
	case ringInside:
		area = ringAreaOf(t, ring, &sc)
	case ringCrosses:
		area = ringAreaOf(t, got, &sc)
	}
	if (area > 0) != (want > 0) || math.Abs(area-want) > geodesic.RelTolerance*want+geodesic.AbsTolerance {
		t.Fatalf("relation %d: area %.6f, GEOS's %.6f", rel, area, want)
	}
	return rel, true, false
}

func ringAreaOf(t *testing.T, xy []float64, sc *geodesic.Scratch) float64 {
	t.Helper()
	flat := append(append([]float64{}, xy...), xy[0], xy[1])
	a, ok := geodesic.Area(geom.NewMultiPolygonFlat(geom.XY, flat, [][]int{{len(flat)}}), sc)
	if !ok {
		t.Fatal("no area")
	}
	return a
}

// FuzzArcs: arcs.piece against GEOS on rings and parcels drawn from the
// fuzzer's seed (see TestArcsAgainstGEOS).
func FuzzArcs(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s, uint8(12), uint8(5), false)
	}
	f.Fuzz(func(t *testing.T, seed uint64, nr, np uint8, share bool) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		c := overlay.New()
		defer c.Close()
		radius := 0.001
		ringFlat := wigglyRing(r, 10, 50, radius*5, 3+int(nr)%200)
		parcelFlat := wigglyRing(r, 10+radius*5*(r.Float64()*2-1), 50+radius*5*(r.Float64()*2-1), radius, 3+int(np)%40)
		if share {
			v := r.IntN(len(ringFlat)/2 - 1)
			parcelFlat[0], parcelFlat[1] = ringFlat[2*v], ringFlat[2*v+1]
			parcelFlat[len(parcelFlat)-2], parcelFlat[len(parcelFlat)-1] = ringFlat[2*v], ringFlat[2*v+1]
		}
		var a arcs
		if _, _, skipped := checkPiece(t, c, &a, ringFlat, parcelFlat); skipped {
			t.Skip()
		}
	})
}
