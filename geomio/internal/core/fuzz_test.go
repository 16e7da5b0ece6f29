package core

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// FuzzWKBPolygon: the polygon fast path of the GDAL reader never panics,
// and what it decodes is what go-geom's WKB decoder decodes (promoted to
// MultiPolygon).
func FuzzWKBPolygon(f *testing.F) {
	poly := geom.NewPolygonFlat(geom.XY, []float64{0, 0, 1, 0, 1, 1, 0, 0, 0.2, 0.2, 0.5, 0.2, 0.5, 0.5, 0.2, 0.2}, []int{8, 16})
	mp := geom.NewMultiPolygon(geom.XY)
	require.NoError(f, mp.Push(poly))
	require.NoError(f, mp.Push(geom.NewPolygonFlat(geom.XY, []float64{5, 5, 6, 5, 6, 6, 5, 5}, []int{8})))
	for _, g := range []geom.T{poly, mp, geom.NewPolygon(geom.XY), geom.NewPointFlat(geom.XY, []float64{1, 2})} {
		b, err := wkb.Marshal(g, wkb.NDR)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d PolyDecoder
		g, ok, err := d.Decode(b)
		if !ok || err != nil || g == nil {
			return
		}
		want, werr := wkb.Unmarshal(b)
		require.NoError(t, werr, "the fast path accepted what go-geom refuses")
		want = PromotePolygons(want)
		require.NotNil(t, want)
		require.Equal(t, want.FlatCoords(), g.FlatCoords())
		require.Equal(t, want.(*geom.MultiPolygon).Endss(), g.(*geom.MultiPolygon).Endss())
	})
}
