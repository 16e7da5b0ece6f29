package shapefile

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// TestPolygonRings: a shapefile's rings are grouped into polygons, each
// hole in the smallest outer ring that holds it.
func TestPolygonRings(t *testing.T) {
	t.Parallel()
	g := polygons([][]float64{cw(0, 0, 10, 10), cw(20, 0, 30, 10), ccw(22, 2, 24, 4), ccw(2, 2, 4, 4), ccw(50, 50, 51, 51)})
	mp := g.(*geom.MultiPolygon)
	require.Equal(t, 3, mp.NumPolygons())
	require.Equal(t, 2, mp.Polygon(0).NumLinearRings(), "hole at (2,2) in the first outer")
	require.Equal(t, 2, mp.Polygon(1).NumLinearRings(), "hole at (22,2) in the second outer")
	require.Equal(t, 1, mp.Polygon(2).NumLinearRings(), "orphan hole is its own polygon")
	// Nested: the hole goes to the smallest containing outer ring.
	mp = polygons([][]float64{cw(0, 0, 100, 100), ccw(10, 10, 90, 90), cw(20, 20, 80, 80), ccw(30, 30, 40, 40)}).(*geom.MultiPolygon)
	require.Equal(t, 2, mp.NumPolygons())
	require.Equal(t, 2, mp.Polygon(1).NumLinearRings())
	require.Equal(t, 20.0, mp.Polygon(1).LinearRing(0).FlatCoords()[0])
	require.Nil(t, polygons([][]float64{{0, 0, 1, 1, 0, 0}}), "degenerate rings dropped")
}

// polygons groups rings with fresh buffers (polygonBuffers.polygons);
// cw and ccw are squares (shapedecoder_test.go).
func polygons(rings [][]float64) geom.T {
	var b polygonBuffers
	return b.polygons(rings)
}
