package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
)

// A source's versions as a county publishes them: each version is the one
// before with a few of its parcels changed, and the simulation keeps the
// truth of what it changed (the oracle of the changelog's precision and
// recall). A parcel's identity in the simulation is its parcel_id (an
// APN-like code, never reused); a keyed source names it as its key, an
// unkeyed one carries it as an attribute the match does not know to be a
// key, so that its features are matched by content and overlap alone.

// The kinds of change a version makes, with their shares of the changes
// (of changed features: a split or a merge counts once).
var changeKinds = []struct {
	kind  string
	share float64
}{
	{"attributes", 0.62},
	{"geometry", 0.15}, // a quarter of them with an attribute changed too
	{"split", 0.06},
	{"merge", 0.05},
	{"added", 0.06},
	{"removed", 0.06},
}

// simParcel is one parcel of a version. A parcel is never changed in place:
// a change makes a new simParcel, so that a version's snapshot (the slice
// of its parcels) stays as it was written.
type simParcel struct {
	f    parcel.Feature
	cell int  // the grid cell it fills; -1: a piece of a split or a merge
	grid bool // drawn by the grid (not a piece or a merge): its geometry can be changed
}

// simSource is the truth of one source's versions.
type simSource struct {
	keyed   bool
	grid    parcel.Grid
	box     [4]float64
	parcels []*simParcel
	next    int   // the next parcel number
	free    []int // grid cells free for an added parcel (freed before this version)
	freed   []int // cells freed by this version: free from the next one
}

// truth is what a version changed, by parcel_id.
type truth struct {
	added, removed, geometry, attributes map[string]bool
	unchanged                            int
}

func newTruth() truth {
	return truth{added: map[string]bool{}, removed: map[string]bool{}, geometry: map[string]bool{}, attributes: map[string]bool{}}
}

// newSimSource draws a source's first version: n parcels of the grid,
// moved into box; the grid's cells beyond n are free for added parcels.
func newSimSource(n int, box [4]float64, keyed bool) *simSource {
	s := &simSource{keyed: keyed, grid: parcel.NewGrid(n), box: box}
	for i := 0; i < n; i++ {
		f := s.grid.Make(i)
		f.Fit(box)
		s.parcels = append(s.parcels, &simParcel{f: f, cell: i, grid: true})
		s.name(s.parcels[i])
	}
	for c := n; c < s.grid.Cols*s.grid.Rows; c++ {
		s.free = append(s.free, c)
	}
	return s
}

// name gives p the next parcel_id.
func (s *simSource) name(p *simParcel) {
	s.next++
	p.f.ParcelID = fmt.Sprintf("APN-%07d", s.next)
}

// snapshot is the current version's parcels, as they stay.
func (s *simSource) snapshot() []*simParcel { return slices.Clone(s.parcels) }

// next version: rate of the parcels changed (each change drawn by
// changeKinds), returning the truth of the change.
func (s *simSource) nextVersion(rng *rand.Rand, rate float64) truth {
	t := newTruth()
	s.free = append(s.free, s.freed...)
	s.freed = nil
	k := int(math.Floor(rate*float64(len(s.parcels)) + rng.Float64()))
	touched := map[*simParcel]bool{}
	byCell := map[int]int{} // cell -> index, of whole-cell grid parcels
	for i, p := range s.parcels {
		if p.cell >= 0 {
			byCell[p.cell] = i
		}
	}
	var removed []int // indexes of parcels removed (a split or a merge's parts included)
	var added []*simParcel
	replace := map[int][]*simParcel{} // index -> the parcels in its place
	pick := func() int {
		for try := 0; try < 20; try++ {
			if i := rng.IntN(len(s.parcels)); !touched[s.parcels[i]] {
				return i
			}
		}
		return -1
	}
	for c := 0; c < k && len(s.parcels) > 0; c++ {
		r, kind := rng.Float64(), "attributes"
		for _, ck := range changeKinds {
			if r < ck.share {
				kind = ck.kind
				break
			}
			r -= ck.share
		}
		if kind == "added" {
			if len(s.free) == 0 {
				continue
			}
			j := rng.IntN(len(s.free))
			cell := s.free[j]
			s.free = append(s.free[:j], s.free[j+1:]...)
			f := s.grid.Make(cell)
			f.Fit(s.box)
			p := &simParcel{f: f, cell: cell, grid: true}
			moveVertex(rng, &p.f) // not the parcel that was there before, if one was
			s.name(p)
			added = append(added, p)
			t.added[p.f.ParcelID] = true
			continue
		}
		i := pick()
		if i < 0 {
			continue
		}
		old := s.parcels[i]
		if (kind == "geometry" || kind == "split") && !old.grid {
			kind = "attributes"
		}
		if kind == "split" && old.f.IsMulti() {
			kind = "attributes"
		}
		switch kind {
		case "attributes", "geometry":
			p := &simParcel{f: old.f, cell: old.cell, grid: old.grid}
			if kind == "geometry" {
				p.f.Polys = clonePolys(old.f.Polys)
				moveVertex(rng, &p.f)
				t.geometry[p.f.ParcelID] = true
			}
			if kind == "attributes" || rng.IntN(4) == 0 {
				changeAttributes(rng, &p.f)
				t.attributes[p.f.ParcelID] = true
			}
			touched[old] = true
			replace[i] = []*simParcel{p}
		case "removed":
			touched[old] = true
			replace[i] = nil
			removed = append(removed, i)
			if old.cell >= 0 {
				s.freed = append(s.freed, old.cell)
			}
		case "split":
			a, b, ok := split(old.f)
			if !ok {
				continue
			}
			pa, pb := &simParcel{f: a, cell: -1}, &simParcel{f: b, cell: -1}
			s.name(pa)
			s.name(pb)
			touched[old] = true
			replace[i] = []*simParcel{pa, pb}
			removed = append(removed, i)
			t.added[pa.f.ParcelID], t.added[pb.f.ParcelID] = true, true
		case "merge":
			// With its right-hand neighbour in the grid, both whole and of
			// comparable size, so that neither is most of the merged parcel.
			if old.cell < 0 || (old.cell+1)%s.grid.Cols == 0 {
				continue
			}
			j, ok := byCell[old.cell+1]
			if !ok || touched[s.parcels[j]] {
				continue
			}
			nb := s.parcels[j]
			if r := area(old.f) / area(nb.f); r < 0.6 || r > 1/0.6 {
				continue
			}
			m := &simParcel{f: old.f, cell: -1}
			m.f.Polys = append(clonePolys(old.f.Polys), clonePolys(nb.f.Polys)...)
			s.name(m)
			touched[old], touched[nb] = true, true
			replace[i] = []*simParcel{m}
			replace[j] = nil
			removed = append(removed, i, j)
			t.added[m.f.ParcelID] = true
		}
	}
	for _, i := range removed {
		t.removed[s.parcels[i].f.ParcelID] = true
	}
	var out []*simParcel
	for i, p := range s.parcels {
		if r, ok := replace[i]; ok {
			out = append(out, r...)
			continue
		}
		out = append(out, p)
		t.unchanged++
	}
	s.parcels = append(out, added...)

	return t
}

func clonePolys(ps []parcel.Polygon) []parcel.Polygon {
	out := make([]parcel.Polygon, len(ps))
	for i, p := range ps {
		out[i] = make(parcel.Polygon, len(p))
		for j, r := range p {
			out[i][j] = slices.Clone(r)
		}
	}
	return out
}

// moveVertex moves one vertex of f's first exterior ring 5-15 % of the way
// to the ring's centre (a boundary redrawn): the ring stays star-shaped,
// so valid, and the parcel keeps more than 0.9 of its area.
func moveVertex(rng *rand.Rand, f *parcel.Feature) {
	ring := f.Polys[0][0]
	n := len(ring) - 1
	var c parcel.Point
	for _, p := range ring[:n] {
		c.X += p.X / float64(n)
		c.Y += p.Y / float64(n)
	}
	for try := 0; try < 10; try++ {
		j := rng.IntN(n)
		s := 0.85 + 0.1*rng.Float64()
		q := parcel.Point{X: round7(c.X + (ring[j].X-c.X)*s), Y: round7(c.Y + (ring[j].Y-c.Y)*s)}
		if q == ring[j] {
			continue
		}
		ring[j] = q
		if j == 0 {
			ring[n] = q
		}
		return
	}
}

func round7(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// changeAttributes changes one or two of f's attributes (a sale, a new
// assessment, a land use re-zoned), two different ones (so that the second
// cannot undo the first).
func changeAttributes(rng *rand.Rand, f *parcel.Feature) {
	x := rng.IntN(3)
	for n := 1 + rng.IntN(2); n > 0; n-- {
		x = (x + 1) % 3
		switch x {
		case 0:
			f.Owner = fmt.Sprintf("Eigentümer %d", rng.IntN(1_000_000))
		case 1:
			f.AssessedValue = math.Round(f.AssessedValue*(1.02+0.1*rng.Float64())*100) / 100
		default:
			uses := []string{"R1", "R2", "R3", "MU", "C1", "C2", "I1", "I2", "AG", "PK", "PU", "VA"}
			u := uses[rng.IntN(len(uses))]
			for u == f.LandUse {
				u = uses[rng.IntN(len(uses))]
			}
			f.LandUse = u
		}
	}
}

// ringArea is a closed ring's signed area (degrees², positive when CCW).
func ringArea(r parcel.Ring) float64 {
	a := 0.0
	for i := 0; i+1 < len(r); i++ {
		a += r[i].X*r[i+1].Y - r[i+1].X*r[i].Y
	}
	return a / 2
}

func area(f parcel.Feature) float64 {
	a := 0.0
	for _, p := range f.Polys {
		for _, r := range p {
			a += ringArea(r)
		}
	}
	return a
}

// split cuts a one-polygon parcel in two through its centre: each piece is
// the centre and one run of the exterior ring (a fan of the star-shaped
// ring, so valid), the runs chosen so that each piece holds 25-75 % of the
// area (a hole, if any, goes). Neither piece can then match the parcel by
// overlap (intersection over union <= 0.75).
func split(f parcel.Feature) (a, b parcel.Feature, ok bool) {
	ring := f.Polys[0][0]
	n := len(ring) - 1
	if n < 4 {
		return a, b, false
	}
	var c parcel.Point
	for _, p := range ring[:n] {
		c.X += p.X / float64(n)
		c.Y += p.Y / float64(n)
	}
	c = parcel.Point{X: round7(c.X), Y: round7(c.Y)}
	tri := func(i int) float64 { return ringArea(parcel.Ring{c, ring[i], ring[i+1], c}) }
	total := 0.0
	for i := 0; i < n; i++ {
		total += tri(i)
	}
	best, cum, k := 2.0, 0.0, 0
	for i := 0; i < n-1; i++ {
		cum += tri(i)
		if d := math.Abs(cum/total - 0.5); d < best {
			best, k = d, i+1
		}
	}
	if best > 0.25 {
		return a, b, false
	}
	ra := append(parcel.Ring{c}, ring[:k+1]...)
	ra = append(ra, c)
	rb := append(parcel.Ring{c}, ring[k:]...)
	rb = append(rb, c)
	a, b = f, f
	a.Polys = []parcel.Polygon{{ra}}
	b.Polys = []parcel.Polygon{{rb}}
	return a, b, true
}
