package prepare

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// TestAppendEWKBMatchesGoGeom: appendEWKB writes what go-geom's EWKB
// writer writes, for every layout, with and without an SRID, with empty
// polygons, holes and several parts.
func TestAppendEWKBMatchesGoGeom(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, layout := range []geom.Layout{geom.XY, geom.XYZ, geom.XYM, geom.XYZM} {
		for _, srid := range []int{0, 4326, 2154} {
			for n := 0; n < 50; n++ {
				stride := layout.Stride()
				mp := geom.NewMultiPolygon(layout)
				for range r.IntN(4) {
					var rings [][]geom.Coord
					for range r.IntN(3) {
						var ring []geom.Coord
						for range 4 + r.IntN(6) {
							c := make(geom.Coord, stride)
							for k := range c {
								c[k] = r.NormFloat64() * 100
							}
							ring = append(ring, c)
						}
						rings = append(rings, append(ring, ring[0]))
					}
					p, err := geom.NewPolygon(layout).SetCoords(rings)
					require.NoError(t, err)
					require.NoError(t, mp.Push(p))
				}
				mp.SetSRID(srid)
				var want bytes.Buffer
				require.NoError(t, ewkb.Write(&want, ewkb.NDR, mp))
				require.Equal(t, want.Bytes(), appendEWKB([]byte("prefix"), mp)[len("prefix"):], "%v srid %d: %v", layout, srid, mp.Endss())
			}
		}
	}
}
