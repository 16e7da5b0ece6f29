package reportcells

import (
	"cmp"
	"slices"
	"sync"
)

// Cell is one admin unit's numbers for one parcel job (report_assignment_cells):
// UnitID 0 stands for no unit.
type Cell struct {
	UnitID     int64
	PosParcels int64
	PosArea    float64
	IntParcels int64
	IntArea    float64
}

// Tally gathers one parcel job's cells against one generation from its
// Workers, one per goroutine.
type Tally struct {
	gen *Generation

	mu      sync.Mutex
	cells   map[int64]*Cell
	parcels int64
	failed  string // why the tally gave up, "" while it holds
	stats   Stats
}

// Stats counts how a Tally's parcels were settled.
type Stats struct {
	// Grid: inside a unit by its grid (no GEOS call); Covers: by a
	// prepared ST_Covers; Complex: across a boundary, outside every
	// unit, or under overlapping units.
	Grid, Covers, Complex int64
	// ArcPieces and GEOSPieces: the pieces of the complex parcels
	// measured from the rings (arcs.go) and by ST_Intersection.
	ArcPieces, GEOSPieces int64
}

func (s Stats) add(o Stats) Stats {
	return Stats{s.Grid + o.Grid, s.Covers + o.Covers, s.Complex + o.Complex,
		s.ArcPieces + o.ArcPieces, s.GEOSPieces + o.GEOSPieces}
}

// Stats is how the parcels added so far (by closed workers) were settled.
func (t *Tally) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// NewTally starts the cells of a job against gen.
func NewTally(gen *Generation) *Tally {
	return &Tally{gen: gen, cells: map[int64]*Cell{}}
}

// Generation is the generation the cells are computed against.
func (t *Tally) Generation() *Generation { return t.gen }

// GiveUp makes the tally fail with reason: a feature went where the
// client cannot follow (the database transforms, repairs or measures it).
func (t *Tally) GiveUp(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed == "" {
		t.failed = reason
	}
}

// Cells returns the cells in unit order and the number of parcels added,
// or ok false with the reason the tally gave up. Call it after every
// Worker is closed.
func (t *Tally) Cells() (cells []Cell, parcels int64, ok bool, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != "" {
		return nil, 0, false, t.failed
	}
	for _, c := range t.cells {
		cells = append(cells, *c)
	}
	slices.SortFunc(cells, func(a, b Cell) int { return cmp.Compare(a.UnitID, b.UnitID) })
	return cells, t.parcels, true, ""
}

// merge adds a worker's cells.
func (t *Tally) merge(cells map[int64]*Cell, parcels int64, failed string, st Stats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats = t.stats.add(st)
	if failed != "" && t.failed == "" {
		t.failed = failed
	}
	t.parcels += parcels
	for id, c := range cells {
		d := t.cells[id]
		if d == nil {
			d = &Cell{UnitID: id}
			t.cells[id] = d
		}
		d.PosParcels += c.PosParcels
		d.PosArea += c.PosArea
		d.IntParcels += c.IntParcels
		d.IntArea += c.IntArea
	}
}
