package reportcells

import (
	"math"
	"slices"
)

// boxIndex finds the units whose boxes meet a box: a uniform grid of
// buckets over the units' extent, each listing the units (by position,
// in id order) whose box meets the bucket.
type boxIndex struct {
	boxes          []box
	ext            box
	n              int // buckets per side
	bw, bh         float64
	buckets        [][]int32
	all            []int32 // used when the extent is degenerate
	degenerateGrid bool
}

func newBoxIndex(boxes []box) boxIndex {
	x := boxIndex{boxes: boxes, ext: emptyBox()}
	for _, b := range boxes {
		x.ext.add(b.minX, b.minY)
		x.ext.add(b.maxX, b.maxY)
	}
	n := int(math.Ceil(math.Sqrt(float64(len(boxes))))) * 2
	n = max(1, min(n, 512))
	x.n = n
	x.bw = (x.ext.maxX - x.ext.minX) / float64(n)
	x.bh = (x.ext.maxY - x.ext.minY) / float64(n)
	if !(x.bw > 0) || !(x.bh > 0) || math.IsInf(x.bw, 0) || math.IsInf(x.bh, 0) {
		x.degenerateGrid = true
		for i := range boxes {
			x.all = append(x.all, int32(i))
		}
		return x
	}
	x.buckets = make([][]int32, n*n)
	for i, b := range boxes {
		i0, j0, i1, j1 := x.span(b)
		for j := j0; j <= j1; j++ {
			for k := i0; k <= i1; k++ {
				x.buckets[j*n+k] = append(x.buckets[j*n+k], int32(i))
			}
		}
	}
	return x
}

// span is the bucket range that b meets, clamped to the grid.
func (x *boxIndex) span(b box) (i0, j0, i1, j1 int) {
	cl := func(v float64) int { return max(0, min(x.n-1, int(math.Floor(v)))) }
	return cl((b.minX - x.ext.minX) / x.bw), cl((b.minY - x.ext.minY) / x.bh),
		cl((b.maxX - x.ext.minX) / x.bw), cl((b.maxY - x.ext.minY) / x.bh)
}

// meeting appends to out the positions of the units whose box meets b,
// in id order, and returns it.
func (x *boxIndex) meeting(out []int32, b box) []int32 {
	out = out[:0]
	if !x.ext.meets(b) {
		return out
	}
	if x.degenerateGrid {
		for _, i := range x.all {
			if x.boxes[i].meets(b) {
				out = append(out, i)
			}
		}
		return out
	}
	i0, j0, i1, j1 := x.span(b)
	for j := j0; j <= j1; j++ {
		for k := i0; k <= i1; k++ {
			for _, i := range x.buckets[j*x.n+k] {
				if x.boxes[i].meets(b) && !slices.Contains(out, i) {
					out = append(out, i)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
