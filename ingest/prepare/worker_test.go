package prepare

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/validity"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// starRing is a closed ring of n vertices around (cx, cy): star-shaped
// (simple) unless shuffle swaps some of its vertices; clockwise when cw.
func starRing(r *rand.Rand, cx, cy, rx, ry float64, n int, cw, shuffle bool) []geom.Coord {
	angles := make([]float64, n)
	for i := range angles {
		angles[i] = 2 * math.Pi * (float64(i) + 0.8*r.Float64()) / float64(n)
	}
	ring := make([]geom.Coord, 0, n+1)
	for _, a := range angles {
		k := 0.5 + 0.5*r.Float64()
		ring = append(ring, geom.Coord{cx + k*rx*math.Cos(a), cy + k*ry*math.Sin(a)})
	}
	if shuffle {
		i, j := r.IntN(n), r.IntN(n)
		ring[i], ring[j] = ring[j], ring[i]
	}
	if cw {
		for i, j := 0, len(ring)-1; i < j; i, j = i+1, j-1 {
			ring[i], ring[j] = ring[j], ring[i]
		}
	}
	return append(ring, ring[0])
}

// BenchmarkPrep measures a COPY worker's work per parcel-like feature
// (EWKB encoding, area, validity), and each part alone:
// go test ./ingest/prepare -run '^$' -bench Prep.
func BenchmarkPrep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]Feature, 1024)
	for i := range rows {
		cx, cy := 2+r.Float64(), 48+r.Float64()
		ring := starRing(r, cx, cy, 2e-4, 1.5e-4, 5+r.IntN(8), false, false)
		p, err := geom.NewPolygon(geom.XY).SetCoords([][]geom.Coord{ring})
		if err != nil {
			b.Fatal(err)
		}
		mp := geom.NewMultiPolygon(geom.XY).SetSRID(4326)
		if err := mp.Push(p); err != nil {
			b.Fatal(err)
		}
		rows[i] = Feature{Index: int64(i), Layer: "parcels", Props: []byte(`{"id":"p1234567","use":"residential"}`), Geom: mp}
	}
	b.Run("batch", func(b *testing.B) {
		p := NewWorker(Direct)
		defer p.Close()
		enc := func(out []byte, _ *Feature, p *Prepared) []byte { return append(out, p.EWKB...) }
		for i := 0; b.Loop(); i++ {
			bt := &batch{rows: rows[(i%16)*64 : (i%16+1)*64]}
			p.batch(bt, enc)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/feature")
	})
	b.Run("area", func(b *testing.B) {
		var s geodesic.Scratch
		for i := 0; b.Loop(); i++ {
			geodesic.Area(rows[i%len(rows)].Geom, &s)
		}
	})
	var buf bytes.Buffer
	wkbs := make([][]byte, len(rows))
	for i, row := range rows {
		buf.Reset()
		if err := ewkb.Write(&buf, ewkb.NDR, row.Geom); err != nil {
			b.Fatal(err)
		}
		wkbs[i] = bytes.Clone(buf.Bytes())
	}
	b.Run("validity", func(b *testing.B) { // validity.Certain, else GEOS
		p := NewWorker(Direct)
		defer p.Close()
		for i := 0; b.Loop(); i++ {
			p.Validity(rows[i%len(rows)].Geom, wkbs[i%len(wkbs)])
		}
	})
	b.Run("geos", func(b *testing.B) {
		vc := validity.NewChecker()
		defer vc.Close()
		for i := 0; b.Loop(); i++ {
			vc.Valid(wkbs[i%len(wkbs)])
		}
	})
}

// FuzzPrep feeds arbitrary coordinates (NaN, infinities, huge, repeated,
// unclosed rings) to a preparation worker's area and validity: no crash, and an
// area is either left to the server or finite.
func FuzzPrep(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 240, 63}, uint8(4))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		var coords []float64
		for len(data) >= 8 {
			coords = append(coords, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		if len(coords)%2 == 1 {
			coords = coords[:len(coords)-1]
		}
		if len(coords) == 0 {
			return
		}
		ring := make([]geom.Coord, 0, len(coords)/2+1)
		for i := 0; i < len(coords); i += 2 {
			ring = append(ring, geom.Coord{coords[i], coords[i+1]})
		}
		if n%2 == 0 {
			ring = append(ring, ring[0]) // closed
		}
		p, err := geom.NewPolygon(geom.XY).SetCoords([][]geom.Coord{ring})
		if err != nil {
			return
		}
		mp := geom.NewMultiPolygon(geom.XY).SetSRID(4326)
		if err := mp.Push(p); err != nil {
			return
		}
		b := &batch{rows: []Feature{{Index: 1, Layer: "l", Props: []byte("{}"), Geom: mp}}}
		w := NewWorker(Direct)
		defer w.Close()
		w.batch(b, func(out []byte, _ *Feature, p *Prepared) []byte { return append(out, p.EWKB...) })
		require.NoError(t, b.err)
		if a, ok := geodesic.Area(mp, nil); ok {
			require.False(t, math.IsNaN(a) || math.IsInf(a, 0), "area %g", a)
		}
	})
}
