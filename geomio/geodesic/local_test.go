//go:build cgo

package geodesic

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// randomRing returns a closed star-shaped ring of n vertices around (lon,
// lat) whose extent is about sizeDeg degrees of latitude (and as many
// kilometres of longitude), counter-clockwise, or clockwise when cw.
func randomRing(r *rand.Rand, lat, lon, sizeDeg float64, n int, cw bool) []geom.Coord {
	coords := make([]geom.Coord, 0, n+1)
	for i := 0; i < n; i++ {
		t := 2 * math.Pi * (float64(i) + r.Float64()*0.8) / float64(n)
		if cw {
			t = -t
		}
		rad := sizeDeg / 2 * (0.3 + 0.7*r.Float64())
		coords = append(coords, geom.Coord{lon + rad*math.Cos(t)/math.Max(0.05, math.Cos(lat*math.Pi/180)), lat + rad*math.Sin(t)})
	}
	return append(coords, coords[0])
}

func randomPolygon(r *rand.Rand, lat, lon, sizeDeg float64, n int) *geom.MultiPolygon {
	return geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{randomRing(r, lat, lon, sizeDeg, n, r.IntN(2) == 0)}})
}

// within reports whether a is b to within RelTolerance and AbsTolerance.
func within(a, b float64) bool {
	return math.Abs(a-b) <= RelTolerance*math.Abs(b)+AbsTolerance
}

// TestLocalAgainstGeographicLib holds the local method to Tolerance of
// GeographicLib on random polygons of 3 to 32 vertices, of every size up
// to LocalMaxSpan, in both orientations, at every latitude the method
// takes; and to 1e-10 (relative) of itself measured around another centre,
// which bounds what the method leaves out, apart from GeographicLib's
// rounding.
func TestLocalAgainstGeographicLib(t *testing.T) {
	m := authalicOnce()
	require.True(t, m.usable)
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []float64{1e-5, 1e-4, 1e-3, 3e-3, LocalMaxSpan / 1.5} {
		var worstRel, worstAbs, worstSelf float64
		var n int
		for i := 0; i < 5000; i++ {
			lat := -LocalMaxLat + 2*LocalMaxLat*r.Float64()
			lon := -179 + 358*r.Float64()
			mp := randomPolygon(r, lat, lon, size, 3+r.IntN(30))
			got, ok := m.localArea(mp)
			if !ok {
				continue // too wide in longitude, near the poles
			}
			want, ok := geographicLibArea(mp, nil)
			require.True(t, ok)
			n++
			require.True(t, within(got, want), "%v: local %.12g, GeographicLib %.12g", mp.FlatCoords(), got, want)
			worstRel = math.Max(worstRel, math.Abs(got-want)/want)
			worstAbs = math.Max(worstAbs, math.Abs(got-want))
			flat := mp.FlatCoords()
			c := m.centre(flat[0], flat[1])
			other := math.Abs(m.localRing(flat, 2, &c))
			require.InEpsilon(t, got, other, 1e-10, "%v: around the first vertex", flat)
			worstSelf = math.Max(worstSelf, math.Abs(other-got)/got)
		}
		require.Greater(t, n, 2500, "most polygons of %g degrees are measured locally", size)
		t.Logf("%g degrees (%d polygons): against GeographicLib, worst %.3g relative, %.3g m²; around another centre, %.3g relative", size, n, worstRel, worstAbs, worstSelf)
	}
}

// TestAreaRoutes checks which method Area uses: the local one within
// LocalMaxSpan and LocalMaxLat, GeographicLib's bit for bit beyond; and
// that holes and several polygons combine as PostGIS combines them.
func TestAreaRoutes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	m := authalicOnce()
	small := randomPolygon(r, 47.2, 8.5, 0.002, 12)
	wide := randomPolygon(r, 47.2, 8.5, 0.2, 12)
	polar := randomPolygon(r, 89.5, 8.5, 0.002, 12)
	for _, c := range []struct {
		name  string
		mp    *geom.MultiPolygon
		local bool
	}{{"small", small, true}, {"wide", wide, false}, {"polar", polar, false}} {
		a, ok := Area(c.mp, nil)
		require.True(t, ok, c.name)
		g, _ := geographicLibArea(c.mp, nil)
		l, isLocal := m.localArea(c.mp)
		require.Equal(t, c.local, isLocal, c.name)
		if c.local {
			require.Equal(t, l, a, c.name)
			require.True(t, within(a, g), c.name)
		} else {
			require.Equal(t, g, a, "%s: GeographicLib's double", c.name)
		}
	}

	// A shell with a hole in the opposite orientation, and a second
	// polygon: shell minus hole, plus the other.
	shell := randomRing(r, -33.9, 151.2, 0.004, 20, false)
	hole := randomRing(r, -33.9, 151.2, 0.001, 8, true)
	other := randomRing(r, -33.905, 151.21, 0.002, 5, true)
	mp := geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{shell, hole}, {other}})
	a, ok := Area(mp, nil)
	require.True(t, ok)
	part := func(rings ...[]geom.Coord) float64 {
		v, ok := Area(geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{rings}), nil)
		require.True(t, ok)
		return v
	}
	require.True(t, within(a, part(shell)-part(hole)+part(other)))
	g, _ := geographicLibArea(mp, nil)
	require.True(t, within(a, g), "%.12g against %.12g", a, g)

	// A NaN or an out-of-range coordinate is never measured here.
	for _, bad := range [][]geom.Coord{
		{{8.5, 47.2}, {8.501, 47.2}, {8.501, math.NaN()}, {8.5, 47.2}},
		{{math.NaN(), 47.2}, {8.501, 47.2}, {8.501, 47.201}, {math.NaN(), 47.2}},
		{{180.0005, 47.2}, {180.001, 47.2}, {180.001, 47.201}, {180.0005, 47.2}},
		{{8.5, 90.0005}, {8.501, 90.0005}, {8.501, 90.001}, {8.5, 90.0005}},
	} {
		_, ok := Area(geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{bad}}), nil)
		require.False(t, ok, "%v", bad)
	}

	// A ring of fewer than four points measures 0, as in PostGIS.
	deg := geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{{{1, 1}, {1.001, 1}, {1, 1}}}})
	a, ok = Area(deg, nil)
	require.True(t, ok)
	require.Zero(t, a)
}

func benchPolys() []*geom.MultiPolygon {
	r := rand.New(rand.NewPCG(3, 4))
	var mps []*geom.MultiPolygon
	for i := 0; i < 1000; i++ {
		mps = append(mps, randomPolygon(r, -60+120*r.Float64(), -179+358*r.Float64(), 0.0005, 5+r.IntN(8)))
	}
	return mps
}

func BenchmarkAreaGeographicLib(b *testing.B) {
	mps := benchPolys()
	var s Scratch
	for i := 0; b.Loop(); i++ {
		geographicLibArea(mps[i%len(mps)], &s)
	}
}

func BenchmarkAreaLocal(b *testing.B) {
	mps := benchPolys()
	var s Scratch
	for i := 0; b.Loop(); i++ {
		Area(mps[i%len(mps)], &s)
	}
}
