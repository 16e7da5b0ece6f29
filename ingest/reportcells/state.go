package reportcells

import (
	"encoding/binary"
	"fmt"

	"github.com/geoingest/geoingest/geomio/overlay"
)

// prepGeom is a GEOS geometry and its prepared form, of one geosState.
type prepGeom struct {
	g *overlay.Geom
	p *overlay.Prepared
}

// geosState is a GEOS context and what it has made of one generation:
// the units read and prepared, their clips and unions. The generation
// keeps it between jobs (Generation.take, put), so that a unit is read
// and prepared once per worker goroutine, not once per job.
type geosState struct {
	c      *overlay.Context
	prep   map[int32]*prepGeom
	cov    *prepGeom // the union of all the units; nil until needed
	covErr bool      // the coverage is unknown: every complex parcel may be outside
	unions map[string]*prepGeom
	clips  map[clipKey]*overlay.Geom // GEOS clips by square (nil: not valid)
}

// The most units, clips and unions a geosState keeps; beyond, it starts
// again (units between two parcels, the rest between two jobs).
const (
	maxStateUnits  = 256
	maxStateClips  = 4096
	maxStateUnions = 256
)

func newGEOSState() *geosState {
	return &geosState{c: overlay.New(), prep: map[int32]*prepGeom{},
		unions: map[string]*prepGeom{}, clips: map[clipKey]*overlay.Geom{}}
}

func (s *geosState) freePrep(p *prepGeom) {
	if p != nil {
		s.c.FreePrepared(p.p)
		s.c.Free(p.g)
	}
}

// trimUnits drops the prepared units when there are more than the bound
// (called between two parcels: no prepared unit is in use).
func (s *geosState) trimUnits() {
	if len(s.prep) > maxStateUnits {
		for _, p := range s.prep {
			s.freePrep(p)
		}
		clear(s.prep)
	}
}

// trim drops the clips and unions beyond the bounds.
func (s *geosState) trim() {
	if len(s.clips) > maxStateClips {
		for _, g := range s.clips {
			s.c.Free(g)
		}
		clear(s.clips)
	}
	if len(s.unions) > maxStateUnions {
		for _, p := range s.unions {
			s.freePrep(p)
		}
		clear(s.unions)
	}
}

// free frees everything, the context last.
func (s *geosState) free() {
	for _, p := range s.prep {
		s.freePrep(p)
	}
	for _, p := range s.unions {
		s.freePrep(p)
	}
	s.freePrep(s.cov)
	for _, g := range s.clips {
		s.c.Free(g)
	}
	s.c.Close()
}

// unit is the worker's prepared geometry of the unit at position i.
func (w *Worker) unit(i int32) (*prepGeom, error) {
	if p := w.prep[i]; p != nil {
		return p, nil
	}
	p, err := w.prepare(w.gen.units[i].wkb)
	if err != nil {
		w.GiveUp(fmt.Sprintf("admin unit %d: %v", w.gen.units[i].id, err))
		return nil, err
	}
	w.prep[i] = p
	return p, nil
}

func (w *Worker) prepare(b []byte) (*prepGeom, error) {
	g, err := w.c.Read(b)
	if err != nil {
		return nil, err
	}
	p, err := w.c.Prepare(g)
	if err != nil {
		w.c.Free(g)
		return nil, err
	}
	return &prepGeom{g, p}, nil
}

// coverage is the prepared union of all the units, nil when unknown.
func (w *Worker) coverage() *prepGeom {
	if w.cov == nil && !w.covErr {
		if len(w.gen.coverage) == 0 {
			w.covErr = true
			return nil
		}
		p, err := w.prepare(w.gen.coverage)
		if err != nil {
			w.covErr = true
			return nil
		}
		w.cov = p
	}
	return w.cov
}

// union is the prepared union of the units in w.cand, cached by their
// positions.
func (w *Worker) union() (*prepGeom, error) {
	w.key = w.key[:0]
	for _, i := range w.cand {
		w.key = binary.LittleEndian.AppendUint32(w.key, uint32(i))
	}
	if p := w.unions[string(w.key)]; p != nil {
		return p, nil
	}
	gs := make([]*overlay.Geom, 0, len(w.cand))
	for _, i := range w.cand {
		pu, err := w.unit(i)
		if err != nil {
			return nil, err
		}
		gs = append(gs, pu.g)
	}
	g, err := w.c.Union(gs)
	if err != nil {
		return nil, fmt.Errorf("GEOS failed on ST_Union of units")
	}
	p, err := w.c.Prepare(g)
	if err != nil {
		w.c.Free(g)
		return nil, fmt.Errorf("GEOS failed to prepare a union of units")
	}
	u := &prepGeom{g, p}
	w.unions[string(w.key)] = u
	return u, nil
}
