package postgis

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/geoingest/geoingest/ingest/reportcells"
	"github.com/jackc/pgx/v5"
)

// The report cells of a parcel job are computed by the writer while the
// job streams (ingest/reportcells), against the current admin generation
// of its pipeline version if that generation is prepared, and kept here
// after the commit until the refresh stores them (report_refresh.go,
// assign) instead of computing them in SQL. They are the same numbers
// geoingest_report_compute gives (counts exactly, areas to within
// geomio/geodesic's tolerance per piece): the pair's inputs (the job's
// rows and the generation's units) are immutable once committed, so cells
// computed before the commit are the pair's cells after it. Whatever the
// client cannot compute as the database would (a feature the server
// transforms, repairs or measures, a GEOS failure), or a generation that
// changed before the refresh, is computed in SQL as before.

// maxPendingCells bounds the cells kept for jobs not refreshed yet (a
// process that never refreshes, such as one run with --no-report-refresh,
// keeps no more than these).
const maxPendingCells = 256

// maxCachedGenerations is how many admin generations a Store keeps ready.
const maxCachedGenerations = 2

// maxCellsVertices bounds the admin generations the writer computes
// cells against: a generation keeps its units' coordinates and, for the
// units parcels meet, grids and edge lists, some 100 bytes a vertex in
// all. A larger admin layer is left to the refresh in SQL.
const maxCellsVertices = 1_500_000

// clientCells is a Store's admin generations and pending cells.
type clientCells struct {
	mu      sync.Mutex
	gens    map[string]*reportcells.Generation
	genAge  []string
	big     []string // generations too large for the writer (the last few)
	pending map[string]pendingCells
	order   []string
	last    reportcells.Stats // the last tally's, for benchmarks and tests
}

// pendingCells are a committed job's cells against one admin generation.
type pendingCells struct {
	gen     string
	unitIDs []int64
	cells   []reportcells.Cell
	stats   reportcells.Stats
}

// reportTally starts the cells of a parcel job against its version's
// current admin generation, or returns nil: not a parcel job, client
// cells off, no prepared generation, or the generation could not be
// loaded (logged; the refresh then computes in SQL).
func (s *Store) reportTally(ctx context.Context, job ingest.Job) *reportcells.Tally {
	if s.NoClientReportCells || job.Delete || job.Params.Target != "parcels" {
		return nil
	}
	rows, err := s.q.PreparedAdminGeneration(ctx, job.Params.PipelineVersion)
	if err != nil || len(rows) != 1 || len(rows[0].UnitIds) == 0 {
		if err != nil {
			s.log.Debug("report cells: admin generation not read; the refresh computes them", "error", err.Error())
		}
		return nil
	}
	row := rows[0]
	c := &s.cells
	c.mu.Lock()
	gen := c.gens[row.AdminGeneration]
	big := slices.Contains(c.big, row.AdminGeneration)
	c.mu.Unlock()
	if big {
		return nil
	}
	if gen == nil || !slices.Equal(gen.UnitIDs, row.UnitIds) {
		units, err := s.q.AdminUnitGeometries(ctx, row.UnitIds)
		if err != nil {
			s.log.Debug("report cells: admin units not read; the refresh computes them", "error", err.Error())
			return nil
		}
		us := make([]reportcells.Unit, len(units))
		for i, u := range units {
			us[i] = reportcells.Unit{ID: u.ID, WKB: u.Wkb}
		}
		if gen, err = reportcells.NewGeneration(row.AdminGeneration, us, row.OverlappingUnits, row.Coverage); err != nil {
			s.log.Info("report cells: admin generation not usable by the client; the refresh computes them", "error", err.Error())
			return nil
		}
		if !slices.Equal(gen.UnitIDs, row.UnitIds) {
			return nil // a unit went missing meanwhile
		}
		if gen.Vertices > maxCellsVertices {
			s.log.Info("report cells: the admin generation is too large for the writer; the refresh computes them",
				"vertices", gen.Vertices, "max", maxCellsVertices)
			gen = nil
		}
		c.mu.Lock()
		if c.gens == nil {
			c.gens = map[string]*reportcells.Generation{}
		}
		if gen == nil {
			// Remembered as too large, so it is not read again.
			c.big = append(c.big[max(0, len(c.big)-7):], row.AdminGeneration)
			c.mu.Unlock()
			return nil
		}
		if _, ok := c.gens[gen.Name]; !ok {
			c.gens[gen.Name] = gen
			c.genAge = append(c.genAge, gen.Name)
			for len(c.genAge) > maxCachedGenerations {
				c.gens[c.genAge[0]].Close() // its GEOS states
				delete(c.gens, c.genAge[0])
				c.genAge = c.genAge[1:]
			}
		}
		c.mu.Unlock()
	}
	return reportcells.NewTally(gen)
}

// cellsObserver shows the prepared features to a Tally.
type cellsObserver struct{ t *reportcells.Tally }

func (o cellsObserver) Worker() prepare.ObserverWorker { return cellsWorker{o.t.Worker()} }

type cellsWorker struct{ w *reportcells.Worker }

func (c cellsWorker) Observe(f *prepare.Feature, p *prepare.Prepared) {
	if !p.Measured || !p.Valid {
		// The server measures it, or repairs it: its row is not what
		// the worker holds.
		c.w.GiveUp("a feature measured or repaired by the server")
		return
	}
	c.w.Add(f.Geom, p.EWKB, p.Area)
}

func (c cellsWorker) Close() { c.w.Close() }

// finishCells returns the pair's cells once the job's rows are final, if
// the tally holds and counted every row written.
func finishCells(t *reportcells.Tally, written int64) *pendingCells {
	if t == nil {
		return nil
	}
	cells, n, ok, _ := t.Cells()
	if !ok || n != written {
		return nil
	}
	return &pendingCells{gen: t.Generation().Name, unitIDs: t.Generation().UnitIDs, cells: cells, stats: t.Stats()}
}

// keepCells keeps a committed job's cells for the refresh.
func (s *Store) keepCells(jobID string, p *pendingCells) {
	if p == nil {
		return
	}
	c := &s.cells
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[string]pendingCells{}
	}
	if _, ok := c.pending[jobID]; !ok {
		c.order = append(c.order, jobID)
	}
	c.pending[jobID] = *p
	c.last = p.stats
	for len(c.order) > maxPendingCells {
		delete(c.pending, c.order[0])
		c.order = c.order[1:]
	}
}

// takeCells removes and returns the cells kept for a job.
func (s *Store) takeCells(jobID string) (pendingCells, bool) {
	c := &s.cells
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[jobID]
	if ok {
		delete(c.pending, jobID)
		if i := slices.Index(c.order, jobID); i >= 0 {
			c.order = slices.Delete(c.order, i, i+1)
		}
	}
	return p, ok
}

// insertGivenCells stores kept cells as the pair's (in the pair's
// refresh transaction, after its gate). false: they do not fit the pair
// (another generation, or not the ledger's count), and nothing was
// stored.
func insertGivenCells(ctx context.Context, q *db.Queries, st db.StaleReportAssignmentsRow, p pendingCells) (int64, bool, error) {
	if p.gen != st.AdminGeneration || !slices.Equal(p.unitIDs, st.UnitIds) {
		return 0, false, nil
	}
	arg := db.InsertReportCellsGivenParams{ParcelJobID: st.ParcelJobID, AdminGeneration: st.AdminGeneration}
	for _, c := range p.cells {
		arg.UnitIds = append(arg.UnitIds, c.UnitID)
		arg.PosParcels = append(arg.PosParcels, c.PosParcels)
		arg.PosAreaM2 = append(arg.PosAreaM2, c.PosArea)
		arg.IntParcels = append(arg.IntParcels, c.IntParcels)
		arg.IntAreaM2 = append(arg.IntAreaM2, c.IntArea)
	}
	arg.UnitIds, arg.PosParcels, arg.PosAreaM2 = nonNil(arg.UnitIds), nonNil(arg.PosParcels), nonNil(arg.PosAreaM2)
	arg.IntParcels, arg.IntAreaM2 = nonNil(arg.IntParcels), nonNil(arg.IntAreaM2)
	row, err := q.InsertReportCellsGiven(ctx, arg)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return row.Parcels, true, nil
}
