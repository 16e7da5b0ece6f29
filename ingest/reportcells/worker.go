package reportcells

import (
	"fmt"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/overlay"
	"github.com/twpayne/go-geom"
)

// Worker adds parcels to a Tally on one goroutine, with a GEOS context
// and prepared units of its own. It is not safe for concurrent use.
type Worker struct {
	t   *Tally
	gen *Generation
	*geosState

	pring  []float64 // the current complex parcel's rings (XY, no closing points)
	prings []pRing   // the rings in pring
	pbox   box
	parea  float64
	arcs   arcs

	cells   map[int64]*Cell
	parcels int64
	failed  string
	stats   Stats

	cand    []int32
	scratch geodesic.Scratch
	buf     []byte
	key     []byte
}

// Worker returns a new Worker of t; Close adds its cells to t.
func (t *Tally) Worker() *Worker {
	return &Worker{t: t, gen: t.gen, geosState: t.gen.take(), cells: map[int64]*Cell{}}
}

// Close adds the worker's cells to its Tally and frees its GEOS objects.
func (w *Worker) Close() {
	w.t.merge(w.cells, w.parcels, w.failed, w.stats)
	w.cells = nil
	w.trim()
	w.gen.put(w.geosState)
	w.geosState = nil
}

// GiveUp makes the tally fail (see Tally.GiveUp).
func (w *Worker) GiveUp(reason string) {
	if w.failed == "" {
		w.failed = reason
	}
}

func (w *Worker) cell(id int64) *Cell {
	c := w.cells[id]
	if c == nil {
		c = &Cell{UnitID: id}
		w.cells[id] = c
	}
	return c
}

// both counts a parcel wholly in unit id (0: in no unit's box) by both
// methods.
func (w *Worker) both(id int64, area float64) {
	c := w.cell(id)
	c.PosParcels++
	c.PosArea += area
	c.IntParcels++
	c.IntArea += area
}

// Add adds one parcel: mp its geometry (EPSG:4326) as written, ewkb its
// encoding as written, area its area_m2 as written.
func (w *Worker) Add(mp *geom.MultiPolygon, ewkb []byte, area float64) {
	if w.failed != "" {
		return
	}
	w.parcels++
	w.trimUnits()
	b := boundsXY(mp.FlatCoords(), mp.Stride())
	w.cand = w.gen.index.meeting(w.cand, b)
	if len(w.cand) == 0 {
		w.both(0, area) // meets no unit's box
		return
	}
	// Covered by a unit that overlaps no other (the first by id): all of
	// it, and its point on surface, in that unit.
	var pg *overlay.Geom // the parcel in GEOS, read when first needed
	defer func() { w.c.Free(pg) }()
	read := func() bool {
		if pg == nil {
			var err error
			if pg, err = w.c.Read(ewkb); err != nil {
				w.GiveUp(fmt.Sprintf("GEOS cannot read a parcel: %v", err))
				return false
			}
		}
		return true
	}
	for _, i := range w.cand {
		u := w.gen.units[i]
		if u.overlapping || !u.box.contains(b) {
			continue
		}
		switch u.classify(b) {
		case interior:
			w.stats.Grid++
			w.both(u.id, area)
			return
		case exterior:
			continue
		}
		if !read() {
			return
		}
		pu, err := w.unit(i)
		if err != nil {
			return
		}
		covers, err := w.c.Covers(pu.p, pg)
		if err != nil {
			w.GiveUp("GEOS failed on ST_Covers")
			return
		}
		if covers {
			w.stats.Covers++
			w.both(u.id, area)
			return
		}
	}
	if !read() {
		return
	}
	w.stats.Complex++
	w.setRing(mp, b, area)
	w.complex(pg, b, area)
}

// complex adds a parcel that no single unit (overlapping no other)
// covers, as geoingest_report_compute's cu0..complex_int steps do.
func (w *Worker) complex(pg *overlay.Geom, b box, area float64) {
	pt, err := w.c.PointOnSurface(pg)
	if err != nil {
		w.GiveUp("GEOS failed on ST_PointOnSurface")
		return
	}
	defer w.c.Free(pt)
	px, py, err := w.c.XY(pt)
	if err != nil {
		w.GiveUp("GEOS gave no point on surface")
		return
	}
	outside, err := w.outside(pg, b)
	if err != nil {
		w.GiveUp(err.Error())
		return
	}
	posUnit, covered := int64(0), false
	for _, i := range w.cand {
		u := w.gen.units[i]
		pu, err := w.unit(i)
		if err != nil {
			return
		}
		covers := false
		if u.overlapping {
			if covers, err = w.c.Covers(pu.p, pg); err != nil {
				w.GiveUp("GEOS failed on ST_Covers")
				return
			}
		}
		if posUnit == 0 {
			// ST_Intersects(unit, point on surface), by the unit's grid
			// unless the point is near its boundary.
			var pos bool
			switch u.classify(box{px, py, px, py}) {
			case interior:
				pos = true
			case boundary:
				if pos, err = w.c.Intersects(pu.p, pt); err != nil {
					w.GiveUp("GEOS failed on ST_Intersects with a point")
					return
				}
			}
			if pos {
				posUnit = u.id
			}
		}
		piece := 0.0
		if covers {
			piece, covered = area, true
		} else if piece, err = w.pieceArea(i, pu, pg, b); err != nil {
			w.GiveUp(err.Error())
			return
		}
		if piece > 0 {
			c := w.cell(u.id)
			c.IntParcels++
			c.IntArea += piece
		}
	}
	c := w.cell(posUnit)
	c.PosParcels++
	c.PosArea += area
	if covered || !outside {
		return
	}
	// Some of it may be in no unit: what the union of the units whose box
	// it meets leaves of it.
	un, err := w.union()
	if err != nil {
		w.GiveUp(err.Error())
		return
	}
	in, err := w.c.Covers(un.p, pg)
	if err != nil {
		w.GiveUp("GEOS failed on ST_Covers with a union of units")
		return
	}
	if in {
		return
	}
	d, err := w.c.Difference(pg, un.g)
	if err != nil {
		w.GiveUp("GEOS failed on ST_Difference")
		return
	}
	out, err := w.area(d)
	w.c.Free(d)
	if err != nil {
		w.GiveUp(err.Error())
		return
	}
	if out > 0 {
		c := w.cell(0)
		c.IntParcels++
		c.IntArea += out
	}
}

// outside is NOT ST_Covers(the union of the units, parcel): by the
// union's grid unless the parcel is near its boundary; true when the
// union is unknown.
func (w *Worker) outside(pg *overlay.Geom, b box) (bool, error) {
	if cu := w.gen.cov; cu != nil {
		switch cu.classify(b) {
		case interior:
			return false, nil
		case exterior:
			return true, nil
		}
	}
	cov := w.coverage()
	if cov == nil {
		return true, nil
	}
	in, err := w.c.Covers(cov.p, pg)
	if err != nil {
		return false, fmt.Errorf("GEOS failed on ST_Covers with the units' union")
	}
	return !in, nil
}

// classify is the unit's grid's verdict on box b (boundary when the unit
// has no grid).
func (u *unit) classify(b box) uint8 {
	u.gridOnce.Do(func() { u.grid = newGrid(u.box, u.flat, u.rings) })
	if u.grid == nil {
		return boundary
	}
	return u.grid.classify(b)
}
