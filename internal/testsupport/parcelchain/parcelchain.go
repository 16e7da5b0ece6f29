// Package parcelchain makes chains of versions of one source for the
// oracle tests of the incremental paths (docs/design.md, "Versions as
// changes"): a grid of square parcels, then each version made by random
// edits of the one before: attributes changed, a vertex moved, parcels
// removed, added, split in two and merged, placeholder keys, bow ties
// (invalid: the server repairs them), the order shuffled. The write
// gate's oracle (ingest/postgis) and the commands' (cmd/geoingest) both
// draw their chains here.
package parcelchain

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Parcel is a square parcel: its properties (a JSON object: an APN key, a
// use, a value), its lower-left corner and size in degrees; Bow draws it
// as a bow tie (the square's top corners swapped).
type Parcel struct {
	Props   string
	X, Y, W float64
	Bow     bool
}

// Odds are how often a chain edits: each parcel gets one of the seven
// edits (removed, attributes twice over, geometry, split, placeholder
// key, bow tie) each with the chance 1/EditOneIn, and a version merges
// two neighbours with the chance 1/MergeOneIn.
type Odds struct {
	EditOneIn, MergeOneIn int
}

// Chain is a source's versions. Parcels is the current version (the
// first: the grid).
type Chain struct {
	Parcels []Parcel
	rng     *rand.Rand
	odds    Odds
	next    int // the last parcel number given
}

// New returns a chain of n parcels drawn from the PCG generator (seed,
// stream) with odds: the same arguments make the same chain.
func New(seed, stream uint64, n int, odds Odds) *Chain {
	c := &Chain{rng: rand.New(rand.NewPCG(seed, stream)), odds: odds}
	for i := 0; i < n; i++ {
		c.Parcels = append(c.Parcels, c.parcel(13+float64(i%20)*0.01, 52.5+float64(i/20)*0.01, 0.008))
	}
	return c
}

// parcel is a new parcel with the next key.
func (c *Chain) parcel(x, y, w float64) Parcel {
	c.next++
	return Parcel{Props: fmt.Sprintf(`{"APN":"P-%d","use":"res","v":0}`, c.next), X: x, Y: y, W: w}
}

// Version edits the parcels into the next version and returns it.
func (c *Chain) Version() []Parcel {
	var out []Parcel
	for _, f := range c.Parcels {
		switch c.rng.IntN(c.odds.EditOneIn) {
		case 0: // removed
			continue
		case 1, 2: // attributes
			f.Props = f.Props[:len(f.Props)-2] + fmt.Sprintf(`%d}`, c.rng.IntN(9)+1)
		case 3: // geometry: a vertex (the square's size) moved a little
			f.W *= 1 + (c.rng.Float64()-0.5)*0.02
		case 4: // split in two halves, new keys
			out = append(out, c.parcel(f.X, f.Y, f.W/2), c.parcel(f.X+f.W/2, f.Y, f.W/2))
			continue
		case 5: // a placeholder key
			f.Props = `{"APN":"-99","use":"res","v":` + fmt.Sprint(c.rng.IntN(1000)) + `}`
		case 6: // a bow tie, or back
			f.Bow = !f.Bow
		}
		out = append(out, f)
	}
	if c.rng.IntN(2) == 0 { // one added, far away
		out = append(out, c.parcel(14+c.rng.Float64(), 53, 0.004))
	}
	if len(out) > 3 && c.rng.IntN(c.odds.MergeOneIn) == 0 { // two neighbours in the file merged
		i := c.rng.IntN(len(out) - 1)
		out = append(append(out[:i:i], c.parcel(out[i].X, out[i].Y, out[i].W*1.2)), out[i+2:]...)
	}
	c.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	c.Parcels = out
	return out
}

// GeoJSON is a FeatureCollection of ps, in their order.
func GeoJSON(ps []Parcel) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i, f := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		tx1, tx2 := f.X+f.W, f.X
		if f.Bow {
			tx1, tx2 = tx2, tx1
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":%s,"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
			f.Props, f.X, f.Y, f.X+f.W, f.Y, tx1, f.Y+f.W, tx2, f.Y+f.W, f.X, f.Y)
	}
	b.WriteString("]}")
	return []byte(b.String())
}
