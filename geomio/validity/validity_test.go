package validity

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func poly(coords ...float64) *geom.MultiPolygon {
	p := geom.NewPolygonFlat(geom.XY, coords, []int{len(coords)})
	mp := geom.NewMultiPolygon(geom.XY)
	if err := mp.Push(p); err != nil {
		panic(err)
	}
	return mp
}

// parts builds a multipolygon: each argument is a polygon, its rings' flat
// XY coordinates, shell first.
func parts(polys ...[][]float64) *geom.MultiPolygon {
	mp := geom.NewMultiPolygon(geom.XY)
	for _, rings := range polys {
		var flat []float64
		var ends []int
		for _, r := range rings {
			flat = append(flat, r...)
			ends = append(ends, len(flat))
		}
		if err := mp.Push(geom.NewPolygonFlat(geom.XY, flat, ends)); err != nil {
			panic(err)
		}
	}
	return mp
}

// TestCertainRefusesWhatItCannotProve: shapes that are invalid, or valid
// but outside what Certain proves, are never reported certain.
func TestCertainRefusesWhatItCannotProve(t *testing.T) {
	withHole := geom.NewMultiPolygon(geom.XY)
	if err := withHole.Push(geom.NewPolygonFlat(geom.XY, []float64{0, 0, 10, 0, 10, 10, 0, 10, 0, 0, 2, 2, 2, 3, 3, 3, 2, 2}, []int{10, 18})); err != nil {
		t.Fatal(err)
	}
	twoParts := geom.NewMultiPolygon(geom.XY)
	for _, c := range [][]float64{{0, 0, 1, 0, 1, 1, 0, 0}, {5, 5, 6, 5, 6, 6, 5, 5}} {
		if err := twoParts.Push(geom.NewPolygonFlat(geom.XY, c, []int{8})); err != nil {
			t.Fatal(err)
		}
	}
	emptyPart := parts([][]float64{{0, 0, 1, 0, 1, 1, 0, 0}})
	if err := emptyPart.Push(geom.NewPolygon(geom.XY)); err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	for name, g := range map[string]geom.T{
		"bowtie":                poly(0, 0, 1, 1, 1, 0, 0, 1, 0, 0),
		"unclosed":              poly(0, 0, 1, 0, 1, 1, 0, 1),
		"two distinct points":   poly(0, 0, 1, 0, 0, 0, 0, 0),
		"three points":          poly(0, 0, 1, 0, 0, 0),
		"zero area triangle":    poly(0, 0, 2, 0, 1, 0, 0, 0),
		"spike":                 poly(0, 0, 4, 0, 4, 4, 4, 8, 4, 4, 0, 4, 0, 0),
		"touches itself":        poly(0, 0, 4, 0, 2, 2, 4, 4, 0, 4, 2, 2, 0, 0),
		"collinear vertex":      poly(0, 0, 1, 0, 2, 0, 2, 2, 0, 2, 0, 0), // valid, but not proved
		"NaN":                   poly(0, 0, nan, 0, 1, 1, 0, 0),
		"infinite":              poly(0, 0, math.Inf(1), 0, 1, 1, 0, 0),
		"point":                 geom.NewPointFlat(geom.XY, []float64{1, 2}),
		"edge through vertex":   poly(0, 0, 4, 0, 4, 4, 2, 0, 0, 4, 0, 0),
		"overlapping edges":     poly(0, 0, 4, 0, 4, 1, 2, 1, 2, 0, 3, 0, 3, -1, 0, -1, 0, 0),
		"nearly collinear fold": poly(0, 0, 1, 1e-300, 2, 0, 0, 0),
		"hole outside":          parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {20, 20, 21, 20, 21, 21, 20, 20}}),
		"hole crossing shell":   parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {8, 8, 12, 8, 12, 9, 8, 8}}),
		"hole touching shell":   parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {0, 5, 3, 4, 3, 6, 0, 5}}), // valid, not proved
		"holes overlapping":     parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {1, 1, 5, 1, 5, 5, 1, 1}, {2, 2, 6, 2, 6, 6, 2, 2}}),
		"hole in a hole":        parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {1, 1, 9, 1, 9, 9, 1, 9, 1, 1}, {4, 4, 5, 4, 5, 5, 4, 4}}),
		"hole is the shell":     parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 0}, {0, 0, 10, 0, 10, 10, 0, 0}}),
		"parts overlapping":     parts([][]float64{{0, 0, 4, 0, 4, 4, 0, 0}}, [][]float64{{1, 0.5, 5, 0.5, 5, 5, 1, 0.5}}),
		"part inside a part":    parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}}, [][]float64{{2, 2, 3, 2, 3, 3, 2, 2}}),
		"parts touching":        parts([][]float64{{0, 0, 1, 0, 1, 1, 0, 0}}, [][]float64{{1, 1, 2, 1, 2, 2, 1, 1}}), // valid, not proved
		"empty part":            emptyPart,
	} {
		if Certain(g) {
			t.Errorf("%s: Certain = true", name)
		}
	}
	for name, g := range map[string]geom.T{
		"square":                 poly(0, 0, 1, 0, 1, 1, 0, 1, 0, 0),
		"repeated points":        poly(0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0),
		"clockwise":              poly(0, 0, 0, 1, 1, 1, 1, 0, 0, 0),
		"concave":                poly(0, 0, 4, 0, 4, 4, 2, 1, 0, 4, 0, 0),
		"lon/lat parcel":         poly(-75.1, 40.01, -75.0997, 40.01, -75.0997, 40.0103, -75.1, 40.0103, -75.1, 40.01),
		"polygon (no multi)":     geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 0, 1, 0, 0}, []int{8}),
		"hole":                   withHole,
		"two parts":              twoParts,
		"two holes":              parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {1, 1, 2, 1, 2, 2, 1, 1}, {5, 5, 6, 5, 6, 6, 5, 5}}),
		"part in a hole's place": parts([][]float64{{0, 0, 10, 0, 10, 10, 0, 10, 0, 0}, {2, 2, 2, 8, 8, 8, 8, 2, 2, 2}}, [][]float64{{20, 20, 21, 20, 21, 21, 20, 20}}),
	} {
		if !Certain(g) {
			t.Errorf("%s: Certain = false", name)
		}
	}
}

// TestCertainAgreesWithPostGIS: on random polygons, many degenerate by
// construction (vertices on a small grid, nearly collinear runs, points
// a rounding error apart), every polygon Certain calls valid is valid for
// ST_IsValid on a real PostGIS; and Certain proves nearly every simple
// star-shaped polygon (it must be worth having).
func TestCertainAgreesWithPostGIS(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(1, 2))

	type gen struct {
		name string
		make func() *geom.MultiPolygon
	}
	ring := func(pts [][2]float64) *geom.MultiPolygon {
		var c []float64
		for _, p := range pts {
			c = append(c, p[0], p[1])
		}
		return poly(append(c, pts[0][0], pts[0][1])...)
	}
	star := func(cx, cy, r float64, n int) [][2]float64 {
		angles := make([]float64, n)
		for i := range angles {
			angles[i] = rng.Float64() * 2 * math.Pi
		}
		sort.Float64s(angles)
		pts := make([][2]float64, n)
		for i, a := range angles {
			rr := r * (0.3 + 0.7*rng.Float64())
			pts[i] = [2]float64{cx + rr*math.Cos(a), cy + rr*math.Sin(a)}
		}
		return pts
	}
	gens := []gen{
		{"grid", func() *geom.MultiPolygon { // tiny grid: collinear, touching, crossing
			pts := make([][2]float64, 3+rng.IntN(6))
			for i := range pts {
				pts[i] = [2]float64{float64(rng.IntN(4)), float64(rng.IntN(4))}
			}
			return ring(pts)
		}},
		{"nearly collinear", func() *geom.MultiPolygon { // points a few ulps off a line
			n := 3 + rng.IntN(5)
			pts := make([][2]float64, n)
			for i := range pts {
				x := rng.Float64()
				y := 0.1*x + 0.3
				for k := rng.IntN(4); k > 0; k-- {
					y = math.Nextafter(y, math.Inf(2*rng.IntN(2)-1))
				}
				pts[i] = [2]float64{x, y}
			}
			return ring(pts)
		}},
		{"lon/lat close points", func() *geom.MultiPolygon { // parcels with near-duplicate vertices
			pts := star(-75+rng.Float64(), 40+rng.Float64(), 1e-4, 4+rng.IntN(8))
			i := rng.IntN(len(pts))
			j := (i + 1 + rng.IntN(len(pts)-1)) % len(pts)
			pts[j] = [2]float64{math.Nextafter(pts[i][0], 0), pts[i][1]}
			return ring(pts)
		}},
		{"notch on an edge", func() *geom.MultiPolygon { // a notch whose tip lies on the opposite edge, up to rounding
			// Near the origin with edges longer than the coordinates, the
			// naive orientation determinant's rounding error exceeds its
			// value: only a certified sign gets these right.
			ax, ay := rng.Float64()*2-1, rng.Float64()*2-1
			ang := rng.Float64() * 2 * math.Pi
			l := 1 + rng.Float64()*10
			bx, by := ax+l*math.Cos(ang), ay+l*math.Sin(ang)
			nx, ny := -math.Sin(ang)*l, math.Cos(ang)*l
			tt := 0.2 + 0.6*rng.Float64()
			px, py := ax+tt*(bx-ax), ay+tt*(by-ay)
			for k := rng.IntN(3); k > 0; k-- {
				px = math.Nextafter(px, math.Inf(2*rng.IntN(2)-1))
				py = math.Nextafter(py, math.Inf(2*rng.IntN(2)-1))
			}
			return ring([][2]float64{{ax, ay}, {bx, by}, {bx + nx, by + ny}, {px, py}, {ax + nx, ay + ny}})
		}},
		{"grid hole", func() *geom.MultiPolygon { // a shell and a hole on a tiny grid: touching, crossing, outside
			return withRings([][][][2]float64{{gridRing(rng, 5), gridRing(rng, 5)}})
		}},
		{"grid parts", func() *geom.MultiPolygon { // two parts on a tiny grid: overlapping, touching, nested
			return withRings([][][][2]float64{{gridRing(rng, 5)}, {gridRing(rng, 5)}})
		}},
		{"star hole", func() *geom.MultiPolygon { // a hole anywhere near the shell: inside, crossing, outside
			c := [2]float64{rng.Float64() * 100, rng.Float64() * 100}
			return withRings([][][][2]float64{{
				closeRing(star(c[0], c[1], 10, 3+rng.IntN(20))),
				closeRing(star(c[0]+rng.Float64()*16-8, c[1]+rng.Float64()*16-8, 1+rng.Float64()*6, 3+rng.IntN(10))),
			}})
		}},
		{"star holes and parts", func() *geom.MultiPolygon { // holes near each other, parts near each other
			c := [2]float64{rng.Float64() * 100, rng.Float64() * 100}
			shell := closeRing(star(c[0], c[1], 10, 3+rng.IntN(20)))
			h1 := closeRing(star(c[0]+rng.Float64()*8-4, c[1]+rng.Float64()*8-4, 0.5+rng.Float64()*3, 3+rng.IntN(6)))
			h2 := closeRing(star(c[0]+rng.Float64()*8-4, c[1]+rng.Float64()*8-4, 0.5+rng.Float64()*3, 3+rng.IntN(6)))
			other := closeRing(star(c[0]+rng.Float64()*30-15, c[1]+rng.Float64()*30-15, 1+rng.Float64()*8, 3+rng.IntN(10)))
			return withRings([][][][2]float64{{shell, h1, h2}, {other}})
		}},
		{"hole a rounding error from the shell", func() *geom.MultiPolygon {
			// The hole's vertex lies on the shell's edge up to a few ulps.
			tt := 0.2 + 0.6*rng.Float64()
			px, py := tt*10, 0.0
			for k := rng.IntN(3); k > 0; k-- {
				py = math.Nextafter(py, math.Inf(2*rng.IntN(2)-1))
			}
			return withRings([][][][2]float64{{
				{{0, 0}, {10, 0}, {10, 10}, {0, 10}, {0, 0}},
				{{px, py}, {px + 1, 2}, {px - 1, 2}, {px, py}},
			}})
		}},
		{"random", func() *geom.MultiPolygon { // arbitrary vertex orders: mostly self-crossing
			pts := make([][2]float64, 3+rng.IntN(8))
			for i := range pts {
				pts[i] = [2]float64{rng.Float64(), rng.Float64()}
			}
			return ring(pts)
		}},
	}
	starCertain, starN := 0, 0
	var certain [][]byte
	var names []string
	// keep records a geometry Certain proved, for GEOS to judge below.
	keep := func(mp *geom.MultiPolygon, name string) {
		b, err := wkb.Marshal(mp, wkb.NDR)
		if err != nil {
			t.Fatal(err)
		}
		certain = append(certain, b)
		names = append(names, name)
	}
	for _, g := range gens {
		for i := 0; i < 3000; i++ {
			mp := g.make()
			if Certain(mp) {
				keep(mp, g.name)
			}
		}
	}
	for i := 0; i < 3000; i++ {
		mp := ring(star(rng.Float64()*1000, rng.Float64()*1000, 1+rng.Float64()*10, 3+rng.IntN(30)))
		starN++
		if Certain(mp) {
			starCertain++
			keep(mp, "star")
		}
	}
	if starCertain < starN*95/100 {
		t.Errorf("Certain proved %d of %d simple star-shaped polygons; want at least 95%%", starCertain, starN)
	}
	// A parcel with a courtyard, and a parcel in two parts: valid by
	// construction, and nearly all proved.
	// evenStar's vertices go round the centre at most 0.8 of a step
	// from evenly spaced: the centre is inside, and so is a small hole.
	evenStar := func(cx, cy, r float64, n int) [][2]float64 {
		pts := make([][2]float64, n, n+1)
		for i := range pts {
			a := 2 * math.Pi * (float64(i) + 0.8*rng.Float64()) / float64(n)
			rr := r * (0.3 + 0.7*rng.Float64())
			pts[i] = [2]float64{cx + rr*math.Cos(a), cy + rr*math.Sin(a)}
		}
		return append(pts, pts[0])
	}
	holedCertain, holedN := 0, 0
	for i := 0; i < 2000; i++ {
		cx, cy := rng.Float64()*1000, rng.Float64()*1000
		mp := withRings([][][][2]float64{
			{evenStar(cx, cy, 10, 3+rng.IntN(20)), evenStar(cx, cy, 1, 3+rng.IntN(8))},
			{evenStar(cx+30, cy, 5, 3+rng.IntN(10))},
		})
		holedN++
		if Certain(mp) {
			holedCertain++
			keep(mp, "holed")
		}
	}
	if holedCertain < holedN*90/100 {
		t.Errorf("Certain proved %d of %d valid polygons with a hole and a second part; want at least 90%%", holedCertain, holedN)
	}
	rows, err := conn.Query(ctx, `SELECT i, ST_IsValidReason(ST_GeomFromWKB(w)) FROM unnest($1::bytea[]) WITH ORDINALITY AS u(w, i) WHERE NOT ST_IsValid(ST_GeomFromWKB(w))`, certain)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var reason string
		if err := rows.Scan(&i, &reason); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s polygon %d: Certain = true, ST_IsValid = false (%s)", names[i-1], i, reason)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d polygons proved valid, all confirmed by ST_IsValid; %d of %d star-shaped proved, %d of %d with holes and parts", len(certain), starCertain, starN, holedCertain, holedN)
}

// gridRing returns a closed ring of 3 to 8 vertices on a size × size
// integer grid: often degenerate.
func gridRing(rng *rand.Rand, size int) [][2]float64 {
	pts := make([][2]float64, 3+rng.IntN(6))
	for i := range pts {
		pts[i] = [2]float64{float64(rng.IntN(size)), float64(rng.IntN(size))}
	}
	return append(pts, pts[0])
}

// closeRing returns pts with its first point appended.
func closeRing(pts [][2]float64) [][2]float64 { return append(pts, pts[0]) }

// withRings builds a multipolygon of closed rings, polygon by polygon,
// shell first.
func withRings(polys [][][][2]float64) *geom.MultiPolygon {
	out := make([][][]float64, 0, len(polys))
	for _, rings := range polys {
		var rs [][]float64
		for _, r := range rings {
			var flat []float64
			for _, p := range r {
				flat = append(flat, p[0], p[1])
			}
			rs = append(rs, flat)
		}
		out = append(out, rs)
	}
	return parts(out...)
}

func BenchmarkCertainParcel(b *testing.B) {
	mp := poly(-75.1, 40.01, -75.0997, 40.01, -75.09968, 40.0101, -75.0997, 40.0103, -75.1, 40.0103, -75.1, 40.01)
	for b.Loop() {
		if !Certain(mp) {
			b.Fatal("not certain")
		}
	}
}
