package validity

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
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
		"hole":                  withHole,
		"two parts":             twoParts,
		"point":                 geom.NewPointFlat(geom.XY, []float64{1, 2}),
		"edge through vertex":   poly(0, 0, 4, 0, 4, 4, 2, 0, 0, 4, 0, 0),
		"overlapping edges":     poly(0, 0, 4, 0, 4, 1, 2, 1, 2, 0, 3, 0, 3, -1, 0, -1, 0, 0),
		"nearly collinear fold": poly(0, 0, 1, 1e-300, 2, 0, 0, 0),
	} {
		if Certain(g) {
			t.Errorf("%s: Certain = true", name)
		}
	}
	for name, g := range map[string]geom.T{
		"square":             poly(0, 0, 1, 0, 1, 1, 0, 1, 0, 0),
		"repeated points":    poly(0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0),
		"clockwise":          poly(0, 0, 0, 1, 1, 1, 1, 0, 0, 0),
		"concave":            poly(0, 0, 4, 0, 4, 4, 2, 1, 0, 4, 0, 0),
		"lon/lat parcel":     poly(-75.1, 40.01, -75.0997, 40.01, -75.0997, 40.0103, -75.1, 40.0103, -75.1, 40.01),
		"polygon (no multi)": geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 0, 1, 0, 0}, []int{8}),
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
	for _, g := range gens {
		for i := 0; i < 3000; i++ {
			mp := g.make()
			if Certain(mp) {
				b, err := wkb.Marshal(mp, wkb.NDR)
				if err != nil {
					t.Fatal(err)
				}
				certain = append(certain, b)
				names = append(names, g.name)
			}
		}
	}
	for i := 0; i < 3000; i++ {
		mp := ring(star(rng.Float64()*1000, rng.Float64()*1000, 1+rng.Float64()*10, 3+rng.IntN(30)))
		starN++
		if Certain(mp) {
			starCertain++
			b, err := wkb.Marshal(mp, wkb.NDR)
			if err != nil {
				t.Fatal(err)
			}
			certain = append(certain, b)
			names = append(names, "star")
		}
	}
	if starCertain < starN*95/100 {
		t.Errorf("Certain proved %d of %d simple star-shaped polygons; want at least 95%%", starCertain, starN)
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
	t.Logf("%d polygons proved valid, all confirmed by ST_IsValid; %d of %d star-shaped proved", len(certain), starCertain, starN)
}

func BenchmarkCertainParcel(b *testing.B) {
	mp := poly(-75.1, 40.01, -75.0997, 40.01, -75.09968, 40.0101, -75.0997, 40.0103, -75.1, 40.0103, -75.1, 40.01)
	for b.Loop() {
		if !Certain(mp) {
			b.Fatal("not certain")
		}
	}
}
