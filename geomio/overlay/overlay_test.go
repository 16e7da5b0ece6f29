package overlay

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

func square(t *testing.T, x0, y0, s float64) []byte {
	t.Helper()
	p := geom.NewPolygonFlat(geom.XY, []float64{x0, y0, x0 + s, y0, x0 + s, y0 + s, x0, y0 + s, x0, y0}, []int{10})
	b, err := wkb.Marshal(p, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOperations: each operation gives what PostGIS's function of the
// same name gives on two squares: the unit square and one overlapping a
// quarter of it.
func TestOperations(t *testing.T) {
	c := New()
	defer c.Close()
	a, err := c.Read(square(t, 0, 0, 1))
	if errors.Is(err, ErrUnavailable) {
		t.Skip("no GEOS in this build")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(a)
	b, err := c.Read(square(t, 0.5, 0.5, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(b)
	in, err := c.Read(square(t, 0.25, 0.25, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(in)
	pa, err := c.Prepare(a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FreePrepared(pa)
	if ok, err := c.Covers(pa, in); err != nil || !ok {
		t.Fatalf("ST_Covers(unit, inner): %v %v", ok, err)
	}
	if ok, err := c.Covers(pa, b); err != nil || ok {
		t.Fatalf("ST_Covers(unit, overlapping): %v %v", ok, err)
	}
	if ok, err := c.Intersects(pa, b); err != nil || !ok {
		t.Fatalf("ST_Intersects(unit, overlapping): %v %v", ok, err)
	}
	area := func(g *Geom) float64 {
		out, err := c.AppendWKB(nil, g)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := wkb.Unmarshal(out)
		if err != nil {
			t.Fatal(err)
		}
		switch tg := tg.(type) {
		case *geom.Polygon:
			return tg.Area()
		case *geom.MultiPolygon:
			return tg.Area()
		}
		t.Fatalf("%T", tg)
		return 0
	}
	for _, tc := range []struct {
		name string
		op   func() (*Geom, error)
		want float64
	}{
		{"intersection", func() (*Geom, error) { return c.Intersection(a, b) }, 0.25},
		{"difference", func() (*Geom, error) { return c.Difference(a, b) }, 0.75},
		{"union", func() (*Geom, error) { return c.Union([]*Geom{a, b}) }, 1.75},
		{"clip", func() (*Geom, error) { return c.ClipByRect(a, 0.5, 0, 2, 2) }, 0.5},
	} {
		g, err := tc.op()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := math.Abs(area(g)); got != tc.want {
			t.Fatalf("%s: area %g, want %g", tc.name, got, tc.want)
		}
		if ok, err := c.Valid(g); err != nil || !ok {
			t.Fatalf("%s: not valid", tc.name)
		}
		c.Free(g)
	}
	pt, err := c.PointOnSurface(in)
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := c.XY(pt)
	c.Free(pt)
	if err != nil || x <= 0.25 || x >= 0.75 || y <= 0.25 || y >= 0.75 {
		t.Fatalf("point on surface (%g %g), %v", x, y, err)
	}
	if _, err := c.Read([]byte{1, 2, 3}); err == nil {
		t.Fatal("a broken WKB was read")
	}
}
