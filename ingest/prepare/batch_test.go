package prepare

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// TestBatchKeepsCopies: a batch's rows do not change when the
// reader reuses its buffers, rows do not share slices with each other,
// and a reused batch drops a buffer a huge feature grew.
func TestBatchKeepsCopies(t *testing.T) {
	props := []byte(`{"a":1}`)
	mp := geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{
		{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}},
		{{{5, 5}, {6, 5}, {6, 6}, {5, 5}}, {{5.1, 5.1}, {5.2, 5.1}, {5.2, 5.2}, {5.1, 5.1}}},
	}).SetSRID(4326)
	want := mp.Clone()

	b := &batch{}
	b.keep(Feature{Index: 7, Props: props, Geom: mp})
	props[2] = 'X'
	mp.FlatCoords()[0] = 99
	other := geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{{{2, 2}, {3, 2}, {3, 3}, {2, 2}}}}).SetSRID(4326)
	b.keep(Feature{Index: 8, Props: []byte(`{}`), Geom: other})

	require.Equal(t, `{"a":1}`, string(b.rows[0].Props))
	require.Equal(t, want.FlatCoords(), b.rows[0].Geom.FlatCoords())
	require.Equal(t, want.Endss(), b.rows[0].Geom.Endss())
	require.Equal(t, 4326, b.rows[0].Geom.SRID())
	require.Equal(t, other.FlatCoords(), b.rows[1].Geom.FlatCoords())

	// Appending to one row's slices must not reach the next row's.
	p0 := append(b.rows[0].Props, '!')
	require.Equal(t, `{}`, string(b.rows[1].Props))
	_ = p0

	huge := make([]geom.Coord, 0, 200000)
	for i := range 200000 {
		huge = append(huge, geom.Coord{float64(i), float64(i % 7)})
	}
	huge = append(huge, huge[0])
	b.keep(Feature{Index: 9, Props: []byte(`{}`), Geom: geom.NewMultiPolygon(geom.XY).MustSetCoords([][][]geom.Coord{{huge}})})
	b.reset()
	require.Empty(t, b.rows)
	require.Nil(t, b.flat, "a buffer grown past keepBytes is dropped")
	require.NotNil(t, b.props, "a small one is kept")
}
