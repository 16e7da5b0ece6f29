package reportcells

import (
	"math"
	"slices"
)

// grid classifies the cells of a regular grid over a unit's box: a cell
// that no edge of the unit comes near (within the cell, closed, grown by
// a margin) lies wholly inside or wholly outside the unit, decided once
// by its centre; every other cell is a boundary cell. A parcel whose box
// meets interior cells only is inside the unit (covered, with its point
// on surface in it) and one that meets exterior cells only is disjoint
// from it, with no GEOS call. The classification is conservative: a cell
// is boundary whenever an edge might touch it.
type grid struct {
	x0, y0, cw, ch float64
	nx, ny         int
	cell           []uint8

	// The unit's edges (ax, ay, bx, by), and per boundary cell and per
	// row (as compressed lists: the entries of cell c are
	// cellEdge[cellStart[c]:cellStart[c+1]]) the edges that come near
	// it: a box in boundary cells is settled exactly by them (exact).
	edges               []float64
	cellStart, cellEdge []int32
	rowStart, rowEdge   []int32
}

const (
	exterior uint8 = iota
	interior
	boundary
)

// gridSide is the number of cells per side of the grid of a unit of n
// vertices: about eight cells a vertex, between 16 × 16 and 256 × 256,
// so that a generation's grids take memory in proportion to its
// vertices (a boundary cell is settled exactly from its edges, so a
// coarser grid costs little).
func gridSide(n int) int {
	return max(16, min(256, int(math.Ceil(math.Sqrt(8*float64(n))))))
}

// newGrid builds the grid of a unit (rings of XY vertices without their
// closing points; ends in float64s), or nil for a degenerate box.
func newGrid(b box, flat []float64, rings []int) *grid {
	side := gridSide(len(flat) / 2)
	g := &grid{x0: b.minX, y0: b.minY, nx: side, ny: side}
	g.cw = (b.maxX - b.minX) / float64(g.nx)
	g.ch = (b.maxY - b.minY) / float64(g.ny)
	if !(g.cw >= minCell) || !(g.ch >= minCell) || math.IsInf(g.cw, 0) || math.IsInf(g.ch, 0) {
		return nil // GEOS decides every parcel of this unit
	}
	g.cell = make([]uint8, g.nx*g.ny)
	// Mark the boundary: every edge is cut into pieces no longer than a
	// cell, and each piece's box, grown by a margin, marks the cells it
	// meets and lists the edge there.
	var cellPairs, rowPairs []int64 // cell or row << 32 | edge
	eachEdge(flat, rings, func(ax, ay, bx, by float64) {
		e := int64(len(g.edges) / 4)
		g.edges = append(g.edges, ax, ay, bx, by)
		_, j0, _, j1 := g.span(box{math.Min(ax, bx), math.Min(ay, by), math.Max(ax, bx), math.Max(ay, by)})
		for j := j0; j <= j1; j++ {
			rowPairs = append(rowPairs, int64(j)<<32|e)
		}
		k := int(math.Ceil(math.Max(math.Abs(bx-ax)/g.cw, math.Abs(by-ay)/g.ch))) + 1
		px, py := ax, ay
		for s := 1; s <= k; s++ {
			qx, qy := bx, by
			if s < k {
				t := float64(s) / float64(k)
				qx, qy = ax+(bx-ax)*t, ay+(by-ay)*t
			}
			i0, j0, i1, j1 := g.span(box{math.Min(px, qx), math.Min(py, qy), math.Max(px, qx), math.Max(py, qy)})
			for j := j0; j <= j1; j++ {
				for i := i0; i <= i1; i++ {
					g.cell[j*g.nx+i] = boundary
					cellPairs = append(cellPairs, int64(j*g.nx+i)<<32|e)
				}
			}
			px, py = qx, qy
		}
	})
	g.cellStart, g.cellEdge = compress(cellPairs, g.nx*g.ny)
	g.rowStart, g.rowEdge = compress(rowPairs, g.ny)
	// The other cells, row by row: a run of them between boundary cells
	// is all inside or all outside (no edge passes between them); the
	// crossings of the row's centre line with the edges decide each run's
	// first cell's centre by parity.
	var xs []float64
	for j := 0; j < g.ny; j++ {
		yc := g.y0 + (float64(j)+0.5)*g.ch
		xs = xs[:0]
		for _, k := range g.rowEdge[g.rowStart[j]:g.rowStart[j+1]] {
			ax, ay, bx, by := g.edges[4*k], g.edges[4*k+1], g.edges[4*k+2], g.edges[4*k+3]
			if (ay > yc) != (by > yc) {
				xs = append(xs, ax+(yc-ay)*(bx-ax)/(by-ay))
			}
		}
		slices.Sort(xs)
		row := g.cell[j*g.nx : (j+1)*g.nx]
		state := exterior
		for i := 0; i < g.nx; i++ {
			if row[i] == boundary {
				state = boundary
				continue
			}
			if state == boundary || i == 0 {
				xc := g.x0 + (float64(i)+0.5)*g.cw
				n := len(xs) - sortSearch(xs, xc) // crossings right of the centre
				state = exterior
				if n%2 == 1 {
					state = interior
				}
			}
			row[i] = state
		}
	}
	return g
}

// sortSearch is the number of xs at most x.
func sortSearch(xs []float64, x float64) int {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := (lo + hi) / 2
		if xs[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// eachEdge calls f with every edge of the rings.
func eachEdge(flat []float64, rings []int, f func(ax, ay, bx, by float64)) {
	begin := 0
	for _, end := range rings {
		n := (end - begin) / 2
		for i := 0; i < n; i++ {
			a := begin + 2*i
			b := begin + 2*((i+1)%n)
			f(flat[a], flat[a+1], flat[b], flat[b+1])
		}
		begin = end
	}
}

// minCell is the smallest cell side, in degrees, of a grid: below it the
// margin would not be far above the rounding of the coordinates.
const minCell = 1e-6

// gridMargin is the fraction of a cell by which every box is grown before
// it is mapped to cells, so that rounding never leaves out a cell that a
// point on a cell line belongs to.
const gridMargin = 1e-6

// span is the range of cells that b, grown by the margin, meets, clamped
// to the grid.
func (g *grid) span(b box) (i0, j0, i1, j1 int) {
	mx, my := g.cw*gridMargin, g.ch*gridMargin
	cl := func(v float64, n int) int { return max(0, min(n-1, int(math.Floor(v)))) }
	return cl((b.minX-mx-g.x0)/g.cw, g.nx), cl((b.minY-my-g.y0)/g.ch, g.ny),
		cl((b.maxX+mx-g.x0)/g.cw, g.nx), cl((b.maxY+my-g.y0)/g.ch, g.ny)
}

// classify is interior when b lies in interior cells only, exterior when
// in exterior cells only (both only for a b within the grid's box), else
// boundary.
func (g *grid) classify(b box) uint8 {
	if b.minX < g.x0 || b.minY < g.y0 || b.maxX > g.x0+g.cw*float64(g.nx) || b.maxY > g.y0+g.ch*float64(g.ny) {
		return boundary
	}
	i0, j0, i1, j1 := g.span(b)
	first := g.cell[j0*g.nx+i0]
	for j := j0; j <= j1; j++ {
		for _, c := range g.cell[j*g.nx+i0 : j*g.nx+i1+1] {
			if c != first {
				return g.exact(b)
			}
		}
	}
	if first == boundary {
		return g.exact(b)
	}
	return first
}

// compress turns (key << 32 | value) pairs into per-key lists of distinct
// values: the values of key k are vals[start[k]:start[k+1]].
func compress(pairs []int64, keys int) (start, vals []int32) {
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	start = make([]int32, keys+1)
	vals = make([]int32, len(pairs))
	for i, p := range pairs {
		start[p>>32+1]++
		vals[i] = int32(p & 0xffffffff)
	}
	for k := 0; k < keys; k++ {
		start[k+1] += start[k]
	}
	return start, vals
}

// exact settles a box that meets boundary cells: interior or exterior
// when no edge of the unit comes within the margin of the box (the
// box then lies wholly on one side, which the parity of the crossings of
// a ray from its centre decides), boundary otherwise.
func (g *grid) exact(b box) uint8 {
	mx, my := g.cw*gridMargin, g.ch*gridMargin
	e := box{b.minX - mx, b.minY - my, b.maxX + mx, b.maxY + my}
	i0, j0, i1, j1 := g.span(b)
	for j := j0; j <= j1; j++ {
		for i := i0; i <= i1; i++ {
			c := j*g.nx + i
			for _, k := range g.cellEdge[g.cellStart[c]:g.cellStart[c+1]] {
				if segmentMeetsBox(g.edges[4*k:4*k+4], e) {
					return boundary
				}
			}
		}
	}
	x, y := (b.minX+b.maxX)/2, (b.minY+b.maxY)/2
	j := max(0, min(g.ny-1, int(math.Floor((y-g.y0)/g.ch))))
	in := false
	for _, k := range g.rowEdge[g.rowStart[j]:g.rowStart[j+1]] {
		ax, ay, bx, by := g.edges[4*k], g.edges[4*k+1], g.edges[4*k+2], g.edges[4*k+3]
		if (ay > y) != (by > y) && x < ax+(y-ay)*(bx-ax)/(by-ay) {
			in = !in
		}
	}
	if in {
		return interior
	}
	return exterior
}

// segmentMeetsBox reports whether the segment s (ax, ay, bx, by) meets
// the closed box b (Liang-Barsky).
func segmentMeetsBox(s []float64, b box) bool {
	ax, ay, bx, by := s[0], s[1], s[2], s[3]
	if math.Max(ax, bx) < b.minX || math.Min(ax, bx) > b.maxX || math.Max(ay, by) < b.minY || math.Min(ay, by) > b.maxY {
		return false
	}
	t0, t1 := 0.0, 1.0
	dx, dy := bx-ax, by-ay
	for _, c := range [4][2]float64{{-dx, ax - b.minX}, {dx, b.maxX - ax}, {-dy, ay - b.minY}, {dy, b.maxY - ay}} {
		p, q := c[0], c[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		r := q / p
		if p < 0 {
			t0 = math.Max(t0, r)
		} else {
			t1 = math.Min(t1, r)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}
