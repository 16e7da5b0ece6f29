package geojson

import (
	"runtime"
	"sync"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// The GeoJSON readers decode in parallel: one goroutine (the splitter)
// cuts the input into batches of raw features, a pool of decoder
// goroutines decodes the batches, and Next hands the features out in
// file order. Memory stays flat: a bounded number of batches is in
// flight, each holding one input buffer (returned to a pool as soon as it
// is decoded) and the features decoded from it.

// batchBytes is the size of a batch's input buffer; a feature larger than
// that gets a buffer of its own size.
const batchBytes = 128 << 10

// maxBatchItems bounds the features of one batch (tiny features would
// otherwise make a batch of tens of thousands of decoded features).
const maxBatchItems = 1024

// parallelMinBytes is the input size from which a reader decodes on
// several goroutines; below it, one batch or two, starting goroutines
// costs more than it saves.
const parallelMinBytes = 2 * batchBytes

// tuning sets how a reader splits and decodes; tests shrink it to
// exercise batch boundaries and parallel decoding on small inputs.
type tuning struct {
	BufSize     int   // input buffer per batch
	MaxItems    int   // features per batch
	MinParallel int64 // input bytes from which to decode in parallel
	Workers     int   // decoder goroutines; 0: GOMAXPROCS
	CrsWindow   int   // bytes of the end of a file to look for a crs member in
}

var defaultTuning = tuning{BufSize: batchBytes, MaxItems: maxBatchItems, MinParallel: parallelMinBytes, CrsWindow: crsWindow}

// decoders returns how many decoder goroutines to run for an input of
// size bytes (0: decode on the caller's goroutine).
func (t tuning) decoders(size int64) int {
	if size < t.MinParallel {
		return 0
	}
	n := t.Workers
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
		if n == 1 {
			return 0
		}
	}
	return n
}

// span locates one raw feature in its batch's buffer.
type span struct{ start, end int }

// batch is a run of consecutive features of one input.
type batch struct {
	buf   []byte // the input bytes the spans point into (pooled)
	base  int64  // file offset of buf[0]
	spans []span
	first int64 // Index of the first feature

	// Set by the splitter: err is an input error after the spans (the
	// features array or the file ends badly), end that the input ended
	// cleanly after them.
	err error
	end bool

	// Set by the decoder: the features decoded from the spans, up to
	// the first that fails to decode, whose error is ferr.
	feats []core.Feature
	ferr  error

	done chan struct{} // closed when decoded (parallel mode)
}

// splitFunc fills b with the next run of raw features.
type splitFunc func(b *batch)

// decodeFunc decodes b's spans into b.feats, stopping at the first error
// (b.ferr), with d's scratch buffers.
type decodeFunc func(d *fastDecoder, b *batch)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes); return &b }}

// getBuf returns an empty buffer of capacity size.
func getBuf(size int) []byte {
	if size != batchBytes {
		return make([]byte, 0, size)
	}
	return (*bufPool.Get().(*[]byte))[:0]
}

// putBuf returns a buffer to the pool, unless it grew for a large feature.
func putBuf(b []byte) {
	if cap(b) == batchBytes {
		bufPool.Put(&b)
	}
}

// pipeline runs a splitFunc and a decodeFunc, on goroutines when
// parallel, and yields the features in order.
type pipeline struct {
	split  splitFunc
	decode decodeFunc

	workers int // decoder goroutines; 0: none, decode in next
	started bool
	order   chan *batch // batches in file order, to the consumer
	work    chan *batch // batches to decode, to the workers
	free    chan *batch // batches the consumer is done with
	quit    chan struct{}
	wg      sync.WaitGroup

	dec   fastDecoder // sequential mode's decoder
	spare *batch      // sequential mode's batch
	cur   *batch
	pos   int
	over  bool // the last batch has been consumed
}

func newPipeline(split splitFunc, decode decodeFunc, workers int) *pipeline {
	return &pipeline{split: split, decode: decode, workers: workers}
}

func (p *pipeline) start() {
	p.started = true
	n := p.workers
	if n == 0 {
		return
	}
	p.order = make(chan *batch, n)
	p.work = make(chan *batch, n)
	p.free = make(chan *batch, n+2)
	p.quit = make(chan struct{})
	p.wg.Add(1 + n)
	go p.splitter()
	for i := 0; i < n; i++ {
		go p.worker()
	}
}

func (p *pipeline) newBatch() *batch {
	select {
	case b := <-p.free:
		return b
	default:
		return &batch{}
	}
}

func (p *pipeline) splitter() {
	defer p.wg.Done()
	defer close(p.work)
	for {
		b := p.newBatch()
		b.done = make(chan struct{})
		p.split(b)
		last := b.end || b.err != nil // b is the consumer's once sent
		select {
		case p.order <- b:
		case <-p.quit:
			putBuf(b.buf)
			return
		}
		select {
		case p.work <- b:
		case <-p.quit:
			return
		}
		if last {
			return
		}
	}
}

func (p *pipeline) worker() {
	defer p.wg.Done()
	var d fastDecoder
	for b := range p.work {
		p.decode(&d, b)
		putBuf(b.buf)
		b.buf = nil
		close(b.done)
	}
}

// Next returns the next feature, or false with the input's error (nil at
// a clean end).
func (p *pipeline) Next() (core.Feature, bool, error) {
	if !p.started {
		p.start()
	}
	for {
		if b := p.cur; b != nil {
			if p.pos < len(b.feats) {
				f := b.feats[p.pos]
				b.feats[p.pos] = core.Feature{}
				p.pos++
				return f, true, nil
			}
			if b.ferr != nil || b.err != nil || b.end {
				err := b.ferr
				if err == nil {
					err = b.err
				}
				p.over = true
				p.close()
				return core.Feature{}, false, err
			}
			p.recycle(b)
			p.cur = nil
		}
		if p.over {
			return core.Feature{}, false, nil
		}
		var b *batch
		if p.workers > 0 {
			b = <-p.order
			<-b.done
		} else {
			if b = p.spare; b == nil {
				b = &batch{}
			}
			p.split(b)
			p.decode(&p.dec, b)
			putBuf(b.buf)
			b.buf = nil
		}
		p.cur, p.pos = b, 0
	}
}

// recycle makes b ready for reuse.
func (p *pipeline) recycle(b *batch) {
	b.spans, b.feats = b.spans[:0], b.feats[:0]
	b.err, b.ferr, b.end, b.done = nil, nil, false, nil
	if p.workers == 0 {
		p.spare = b
		return
	}
	select {
	case p.free <- b:
	default:
	}
}

// close stops the goroutines and waits for them. The splitter stops at
// its next send; the workers end when the splitter has closed their
// channel and they have decoded what it holds.
func (p *pipeline) close() {
	if p.quit != nil {
		close(p.quit)
		p.wg.Wait()
		p.quit = nil
	}
}
