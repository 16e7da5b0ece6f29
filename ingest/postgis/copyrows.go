package postgis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/validity"
	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5"
	"github.com/twpayne/go-geom"
)

// copyRows streams rows into table with one binary COPY. The features are
// read on one goroutine, prepared (encoded, and for the feature table
// measured and checked, see prepBatch) on GOMAXPROCS workers, and written
// in their input order by a third goroutine, all overlapping with the
// server's work on the rows already sent. At most a few batches of
// features are in memory at once. With staged, the columns are the staging
// table's (feature_index, layer, properties, wkb); otherwise they are the
// feature table's (job_ref, feature_index, layer, properties, geom,
// area_m2) and the geometry must be EWKB in EPSG:4326 (a MultiPolygon).
// freeze asks for COPY FREEZE, allowed because the table was created in
// this transaction.
//
// The table name is geoingest_staging or one that
// geoingest_create_job_table returned: never input. It returns the
// reader's own error when the rows stopped on one, so that its
// classification survives; a server error is classified by normaliseErr.
// The features the workers found invalid are appended to rows.invalid, and
// rows.serverCheck is set when some row went without an area (see
// prepBatch).
func copyRows(ctx context.Context, tx pgx.Tx, table string, staged, freeze bool, rows *featureRows) (int64, error) {
	cols := " (job_ref, feature_index, layer, properties, geom, area_m2)"
	if staged {
		cols = " (feature_index, layer, properties, wkb)"
	}
	opts := " FROM STDIN (FORMAT binary)"
	if freeze {
		opts = " FROM STDIN (FORMAT binary, FREEZE)"
	}
	sql := "COPY " + pgx.Identifier{table}.Sanitize() + cols + opts

	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := bufio.NewWriterSize(pw, 1<<16)
		err := rows.encode(w, staged)
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err) // nil: the reader sees EOF, the end of the COPY data
	}()
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, pr, sql)
	pr.CloseWithError(io.ErrClosedPipe) // stops the producer if the server gave up first
	<-done
	if rows.err != nil {
		return 0, rows.err
	}
	if err != nil {
		return 0, normaliseErr(fmt.Errorf("copy: %w", err))
	}
	return tag.RowsAffected(), nil
}

// pgCopySignature is the binary COPY header: signature, flags, extension.
var pgCopySignature = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyBatchRows is how many features one prepared batch holds: enough to
// make a batch's channel operations negligible against its work, few
// enough that the batches in flight stay small.
const copyBatchRows = 64

// copyBatch is a run of consecutive features and, once done is closed,
// their binary COPY tuples (out), the indexes of those found invalid, and
// whether some row went without an area.
type copyBatch struct {
	rows        []copyRow
	out         []byte
	invalid     []int64
	serverCheck bool
	err         error
	done        chan struct{}

	// The batch's own copies of its features' properties and geometry
	// (a reader's Feature is valid until its next Next), in a few slices
	// reused from batch to batch instead of some five allocations a row.
	props []byte
	flat  []float64
	ends  []int
	endss [][]int
}

// keep appends a copy of row to b.rows, its properties and geometry
// copied into b's arenas. A copy's slices have their capacity capped, so
// that nothing appended to one reaches the next.
func (b *copyBatch) keep(row copyRow) {
	n := len(b.props)
	b.props = append(b.props, row.props...)
	row.props = b.props[n:len(b.props):len(b.props)]

	src := row.geom
	n = len(b.flat)
	b.flat = append(b.flat, src.FlatCoords()...)
	flat := b.flat[n:len(b.flat):len(b.flat)]
	e := len(b.endss)
	for _, ends := range src.Endss() {
		k := len(b.ends)
		b.ends = append(b.ends, ends...)
		b.endss = append(b.endss, b.ends[k:len(b.ends):len(b.ends)])
	}
	row.geom = geom.NewMultiPolygonFlat(src.Layout(), flat, b.endss[e:len(b.endss):len(b.endss)]).SetSRID(src.SRID())
	b.rows = append(b.rows, row)
}

// reset empties b for the next run of features, keeping its buffers,
// except one that a very large feature grew beyond keepBytes: a job of a
// few huge admin units must not keep a dozen huge buffers for its rest.
func (b *copyBatch) reset() {
	clear(b.rows) // drop the references to the geometries
	b.rows, b.out, b.invalid = b.rows[:0], trim(b.out), b.invalid[:0]
	b.props, b.flat, b.ends = trim(b.props), trim(b.flat), trim(b.ends)
	clear(b.endss)
	b.endss = b.endss[:0]
	b.serverCheck, b.err = false, nil
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

// encode writes the binary COPY data for the rows next yields: header,
// tuples, trailer. The features are read here (one goroutine: next is
// sequential), in batches handed to GOMAXPROCS worker goroutines, and the
// prepared batches are written in input order, so that the stream is the
// same whatever the timing. It returns a non-nil error only when writing
// failed or the rows stopped on an error (f.err); a switch to the staged
// path (f.switched) ends the data normally.
func (f *featureRows) encode(w *bufio.Writer, staged bool) error {
	if _, err := w.Write(pgCopySignature); err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *copyBatch, workers)
	order := make(chan *copyBatch, 2*workers)
	// free holds written batches for reuse: every batch in flight is in
	// work, order or a worker's hands, at most 3*workers+2 of them.
	free := make(chan *copyBatch, 3*workers+2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newPrep(f.ref, staged)
			defer p.close()
			for b := range work {
				p.batch(b)
				close(b.done)
			}
		}()
	}
	// The producer: reads the features in order, in batches. It stops when
	// the rows end or the writer gave up (stop).
	go func() {
		defer close(order)
		defer close(work)
		for {
			var b *copyBatch
			select {
			case b = <-free:
				b.reset()
			default:
				b = &copyBatch{rows: make([]copyRow, 0, copyBatchRows), done: make(chan struct{})}
			}
			for len(b.rows) < copyBatchRows && f.next(!staged) {
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
			if n < copyBatchRows {
				return
			}
		}
	}()
	err, rowErr := f.writeBatches(w, order, free)
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
	if f.err != nil {
		return f.err
	}
	_, err = w.Write([]byte{0xff, 0xff}) // the trailer: a tuple of -1 fields
	return err
}

// writeBatches writes the prepared batches in input order and gathers
// what the workers found. It stops at the first write error (err) or the
// first batch a worker could not prepare (rowErr).
func (f *featureRows) writeBatches(w *bufio.Writer, order <-chan *copyBatch, free chan<- *copyBatch) (err, rowErr error) {
	for b := range order {
		<-b.done
		if b.err != nil {
			return nil, b.err
		}
		if _, err := w.Write(b.out); err != nil {
			return err, nil
		}
		f.invalid = append(f.invalid, b.invalid...)
		f.serverCheck = f.serverCheck || b.serverCheck
		select {
		case free <- b:
		default:
		}
	}
	return nil, nil
}

// prep is one worker's state: its GEOS context and area buffers.
type prep struct {
	ref    int64
	staged bool
	valid  *validityChecker
	area   geodesic.Scratch
	wkb    []byte // the row's EWKB, reused
}

func newPrep(ref int64, staged bool) *prep {
	p := &prep{ref: ref, staged: staged}
	if !staged {
		p.valid = newValidityChecker()
	}
	return p
}

// close frees the worker's GEOS context.
func (p *prep) close() {
	if p.valid != nil {
		p.valid.close()
	}
}

// validity is ST_IsValid's verdict on mp (whose EWKB is wkb), and whether
// it is known: validity.Certain's proof for the common parcel (one simple
// ring), or else GEOS's.
func (p *prep) validity(mp *geom.MultiPolygon, wkb []byte) (valid, known bool) {
	if validity.Certain(mp) {
		return true, true
	}
	return p.valid.valid(wkb)
}

// batch encodes b's rows as binary COPY tuples. For the feature table it
// also computes each geometry's area (geodesic.Area: ST_Area(geography)
// to within geodesic's tolerance) and validity (ST_IsValid's, see
// prep.validity), recording the invalid features' indexes; a row whose area or validity cannot be decided here
// (coordinates outside the longitude/latitude ranges, a valid geometry
// whose area on the spheroid comes out negative, a build without cgo)
// goes with a NULL area, and b.serverCheck tells the server to
// measure and check the rows with no area itself.
func (p *prep) batch(b *copyBatch) {
	out := bytes.NewBuffer(b.out[:0])
	for i := range b.rows {
		row := &b.rows[i]
		p.wkb = appendEWKB(p.wkb[:0], row.geom)
		if len(p.wkb) > math.MaxInt32 {
			b.err = ingest.Permanentf("feature %d: geometry of %d bytes is too large", row.index, len(p.wkb))
			return
		}
		if p.staged {
			putInt16(out, 4)
		} else {
			putInt16(out, 6)
			putInt32(out, 8)
			putInt64(out, p.ref)
		}
		putInt32(out, 8)
		putInt64(out, row.index)
		putInt32(out, int32(len(row.layer)))
		out.WriteString(row.layer)
		putInt32(out, int32(len(row.props)+1))
		out.WriteByte(1) // jsonb binary format version
		out.Write(row.props)
		putInt32(out, int32(len(p.wkb)))
		out.Write(p.wkb)
		if p.staged {
			continue
		}
		area, measured := geodesic.Area(row.geom, &p.area)
		valid, known := p.validity(row.geom, p.wkb)
		if valid && area < 0 {
			// Holes larger than the shell on the spheroid: ST_Area refuses
			// to return that ("area < 0.0"), and the server's check says
			// so, as it did when it measured every row. (An invalid
			// geometry's area is recomputed after its repair.)
			measured = false
		}
		if !measured || !known {
			putInt32(out, -1) // NULL: the server measures and checks it
			b.serverCheck = true
			continue
		}
		putInt32(out, 8)
		putInt64(out, int64(math.Float64bits(area)))
		if !valid {
			b.invalid = append(b.invalid, row.index)
		}
	}
	b.out = out.Bytes()
}

func putInt16(w *bytes.Buffer, v int16) {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], uint16(v))
	w.Write(b[:])
}

func putInt32(w *bytes.Buffer, v int32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(v))
	w.Write(b[:])
}

func putInt64(w *bytes.Buffer, v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	w.Write(b[:])
}

// copyRow is one feature ready to be encoded.
type copyRow struct {
	index int64
	layer string
	props []byte
	geom  *geom.MultiPolygon
}
