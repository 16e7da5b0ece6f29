package prepare

import (
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/validity"
	"github.com/geoingest/geoingest/ingest"
	"github.com/twpayne/go-geom"
)

// Mode is what a run prepares.
type Mode int

const (
	// Direct: features in EPSG:4326, each encoded and measured (area and
	// validity). The run stops at the first feature in another CRS
	// (Features.Switched).
	Direct Mode = iota
	// Staged: features in any CRS, encoded only, for the database to
	// transform, measure and check.
	Staged
)

// Prepared is what the workers computed for one feature.
type Prepared struct {
	// EWKB is the geometry, little-endian EWKB with its SRID. It is the
	// worker's buffer: valid only during the RowEncoder call.
	EWKB []byte
	// Measured: Area and Valid are known. A Direct row is unmeasured when
	// its coordinates are outside the longitude/latitude ranges, when a
	// valid geometry's area on the spheroid comes out negative (ST_Area
	// refuses it), or in a build without cgo; a Staged row always is.
	Measured bool
	// Area is ST_Area(geom::geography) to within geodesic's tolerance.
	Area float64
	// Valid is ST_IsValid's verdict.
	Valid bool
}

// RowEncoder appends the encoding of one prepared feature to out and
// returns it. It runs on the worker goroutines, concurrently: it must use
// only its arguments.
type RowEncoder func(out []byte, f *Feature, p *Prepared) []byte

// batchRows is how many features one batch holds: enough to make a
// batch's channel operations negligible against its work, few enough
// that the batches in flight stay small.
const batchRows = 64

// batch is a run of consecutive features and, once done is closed, their
// encoding (out), the indexes of those found invalid, and whether some
// feature went unmeasured.
type batch struct {
	rows        []Feature
	out         []byte
	invalid     []int64
	serverCheck bool
	bbox        bbox // of a Direct batch's geometries
	err         error
	done        chan struct{}

	// The batch's own copies of its features' properties and geometry
	// (a reader's Feature is valid until its next Next), in a few slices
	// reused from batch to batch instead of some five allocations a row.
	props []byte
	spans []int32
	flat  []float64
	ends  []int
	endss [][]int
}

// keep appends a copy of row to b.rows, its properties and geometry
// copied into b's arenas. A copy's slices have their capacity capped, so
// that nothing appended to one reaches the next.
func (b *batch) keep(row Feature) {
	n := len(b.props)
	b.props = append(b.props, row.Props...)
	row.Props = b.props[n:len(b.props):len(b.props)]
	if row.Spans != nil {
		n = len(b.spans)
		b.spans = append(b.spans, row.Spans...)
		row.Spans = b.spans[n:len(b.spans):len(b.spans)]
	}

	src := row.Geom
	n = len(b.flat)
	b.flat = append(b.flat, src.FlatCoords()...)
	flat := b.flat[n:len(b.flat):len(b.flat)]
	e := len(b.endss)
	for _, ends := range src.Endss() {
		k := len(b.ends)
		b.ends = append(b.ends, ends...)
		b.endss = append(b.endss, b.ends[k:len(b.ends):len(b.ends)])
	}
	row.Geom = geom.NewMultiPolygonFlat(src.Layout(), flat, b.endss[e:len(b.endss):len(b.endss)]).SetSRID(src.SRID())
	b.rows = append(b.rows, row)
}

// reset empties b for the next run of features, keeping its buffers,
// except one that a very large feature grew beyond keepBytes: a job of a
// few huge admin units must not keep a dozen huge buffers for its rest.
func (b *batch) reset() {
	clear(b.rows) // drop the references to the geometries
	b.rows, b.out, b.invalid = b.rows[:0], trim(b.out), b.invalid[:0]
	b.props, b.spans, b.flat, b.ends = trim(b.props), trim(b.spans), trim(b.flat), trim(b.ends)
	clear(b.endss)
	b.endss = b.endss[:0]
	b.serverCheck, b.err, b.bbox = false, nil, bbox{}
	b.done = make(chan struct{})
}

// keepBytes is the largest buffer a reused batch keeps.
const keepBytes = 1 << 20

// trim empties s, or drops it when it holds more than keepBytes.
func trim[T any](s []T) []T {
	var zero T
	if cap(s)*int(unsafe.Sizeof(zero)) > keepBytes {
		return nil
	}
	return s[:0]
}

// Run prepares the features f yields, in mode, and hands their encodings
// to emit in input order, so that the output is the same whatever the
// timing. The features are read on one goroutine (the reader is
// sequential), in batches handed to GOMAXPROCS workers that encode,
// measure and check them and call enc on each, and the batches are
// emitted on the caller's goroutine as they complete in order, all
// overlapping with whatever emit's consumer does. At most a few batches
// are in memory at once. emit's out is valid until it returns.
//
// It returns the first error: emit's, a worker's, or the features' own
// (Err, with its classification). A Direct run that stops at a feature in
// another CRS (Switched) ends normally. The invalid features' indexes are
// appended to f.Invalid, and f.ServerCheck set when some feature went
// unmeasured.
func (f *Features) Run(mode Mode, enc RowEncoder, emit func(out []byte) error) error {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	// free holds emitted batches for reuse: every batch in flight is in
	// work, order or a worker's hands, at most 3*workers+2 of them.
	free := make(chan *batch, 3*workers+2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := NewWorker(mode)
			defer w.Close()
			if f.Observe != nil && mode == Direct {
				w.observe = f.Observe.Worker()
				defer w.observe.Close()
			}
			for b := range work {
				w.batch(b, enc)
				close(b.done)
			}
		}()
	}
	// The producer: reads the features in order, in batches. It stops when
	// the features end or the emitter gave up (stop).
	go func() {
		defer close(order)
		defer close(work)
		for {
			var b *batch
			select {
			case b = <-free:
				b.reset()
			default:
				b = &batch{rows: make([]Feature, 0, batchRows), done: make(chan struct{})}
			}
			for len(b.rows) < batchRows && f.next(mode == Direct) {
				// A reader's Feature is valid until its next Next
				// (geomio.Reader): the batch keeps copies.
				b.keep(f.row)
			}
			n := len(b.rows) // b.rows is the worker's once sent
			if n == 0 {
				return
			}
			select {
			case order <- b:
			case <-stop:
				return
			}
			select {
			case work <- b:
			case <-stop:
				return
			}
			if n < batchRows {
				return
			}
		}
	}()
	err, rowErr := f.emitBatches(order, free, emit)
	close(stop)
	for range order { // until the producer has ended
	}
	wg.Wait()
	if rowErr != nil {
		f.err = rowErr
		return f.err
	}
	if err != nil {
		return err
	}
	return f.err
}

// emitBatches emits the prepared batches in input order and gathers what
// the workers found. It stops at the first emit error (err) or the first
// batch a worker could not prepare (rowErr).
func (f *Features) emitBatches(order <-chan *batch, free chan<- *batch, emit func([]byte) error) (err, rowErr error) {
	for b := range order {
		<-b.done
		if b.err != nil {
			return nil, b.err
		}
		if err := emit(b.out); err != nil {
			return err, nil
		}
		f.Invalid = append(f.Invalid, b.invalid...)
		f.ServerCheck = f.ServerCheck || b.serverCheck
		f.bbox.union(b.bbox)
		select {
		case free <- b:
		default:
		}
	}
	return nil, nil
}

// Worker is one preparing goroutine's state: its GEOS context and area
// buffers. It is not safe for concurrent use.
type Worker struct {
	mode  Mode
	valid *validity.Checker
	area  geodesic.Scratch
	p     Prepared
	wkb   []byte // the row's EWKB, reused

	observe ObserverWorker // nil unless the run has an Observer
}

// NewWorker returns a Worker for mode; Close frees it.
func NewWorker(mode Mode) *Worker {
	w := &Worker{mode: mode}
	if mode == Direct {
		w.valid = validity.NewChecker()
	}
	return w
}

// Close frees the worker's GEOS context.
func (w *Worker) Close() {
	if w.valid != nil {
		w.valid.Close()
	}
}

// Validity is ST_IsValid's verdict on mp (whose EWKB is wkb), and whether
// it is known: validity.Certain's proof for the common parcel (one simple
// ring), or else GEOS's. The worker must be Direct.
func (w *Worker) Validity(mp *geom.MultiPolygon, wkb []byte) (valid, known bool) {
	if validity.Certain(mp) {
		return true, true
	}
	return w.valid.Valid(wkb)
}

// Prepare encodes f as EWKB and, for a Direct worker, computes its area
// (geodesic.Area: ST_Area(geography) to within geodesic's tolerance) and
// validity (see Validity). The result is valid until the next call.
func (w *Worker) Prepare(f *Feature) (*Prepared, error) {
	w.wkb = appendEWKB(w.wkb[:0], f.Geom)
	if len(w.wkb) > math.MaxInt32 {
		return nil, ingest.Permanentf("feature %d: geometry of %d bytes is too large", f.Index, len(w.wkb))
	}
	w.p = Prepared{EWKB: w.wkb}
	if w.mode != Direct {
		return &w.p, nil
	}
	area, measured := geodesic.Area(f.Geom, &w.area)
	valid, known := w.Validity(f.Geom, w.wkb)
	if valid && area < 0 {
		// Holes larger than the shell on the spheroid: ST_Area refuses
		// to return that ("area < 0.0"), and the server's check says
		// so. (An invalid geometry's area is recomputed after its
		// repair.)
		measured = false
	}
	w.p.Measured = measured && known
	if w.p.Measured {
		w.p.Area, w.p.Valid = area, valid
	}
	return &w.p, nil
}

// batch prepares b's rows and encodes each with enc into b.out, recording
// the invalid features' indexes and whether some went unmeasured.
func (w *Worker) batch(b *batch, enc RowEncoder) {
	out := b.out[:0]
	for i := range b.rows {
		row := &b.rows[i]
		p, err := w.Prepare(row)
		if err != nil {
			b.err = err
			return
		}
		if w.observe != nil {
			w.observe.Observe(row, p)
		}
		out = enc(out, row, p)
		if w.mode != Direct {
			continue
		}
		b.bbox.add(row.Geom.FlatCoords(), row.Geom.Stride())
		if !p.Measured {
			b.serverCheck = true
		} else if !p.Valid {
			b.invalid = append(b.invalid, row.Index)
		}
	}
	b.out = out
}

// bbox is a bounding box of coordinates: x and y min, x and y max.
type bbox struct {
	b   [4]float64
	set bool
}

// add widens the box to the points of flat (stride values each).
func (x *bbox) add(flat []float64, stride int) {
	if len(flat) < 2 {
		return
	}
	b := x.b
	if !x.set {
		b = [4]float64{flat[0], flat[1], flat[0], flat[1]}
		x.set = true
	}
	for i := 0; i+1 < len(flat); i += stride {
		px, py := flat[i], flat[i+1]
		b[0], b[1], b[2], b[3] = min(b[0], px), min(b[1], py), max(b[2], px), max(b[3], py)
	}
	x.b = b
}

// union widens the box to o.
func (x *bbox) union(o bbox) {
	if !o.set {
		return
	}
	if !x.set {
		*x = o
		return
	}
	x.b = [4]float64{min(x.b[0], o.b[0]), min(x.b[1], o.b[1]), max(x.b[2], o.b[2]), max(x.b[3], o.b[3])}
}
