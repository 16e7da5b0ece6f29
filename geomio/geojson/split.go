package geojson

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/geoingest/geoingest/geomio/jsonscan"
)

// Splitters cut an input into raw features for the pipeline, without
// parsing them: for a FeatureCollection, the elements of its features
// array (found by tracking strings, escapes and bracket depth); for a
// GeoJSON sequence, its records (lines or RFC 8142 records). The decoders
// validate each feature in full, so a splitter only has to find where one
// ends; for valid JSON that is exactly where encoding/json ends it.

// input is the part of a file a splitter reads, with the buffer carried
// from one batch to the next.
type input struct {
	rd   io.Reader
	eof  bool
	rerr error // a read error other than EOF

	Buf  []byte // bytes read and not yet handed out (a pooled buffer)
	base int64  // file offset of buf[0]
	Size int    // capacity of a new buffer
	// limit, when positive, is the most bytes one feature or record
	// may need in buf (the splitter refuses a longer one): a buffer
	// grows no larger.
	Limit int
	// fileSize, when positive, is the file's size: a buffer grows no
	// larger than what is left of it.
	FileSize int64
}

// fill reads into buf until it is full or the input ends.
func (in *input) fill() {
	for !in.eof && in.rerr == nil && len(in.Buf) < cap(in.Buf) {
		n, err := in.rd.Read(in.Buf[len(in.Buf):cap(in.Buf)])
		in.Buf = in.Buf[:len(in.Buf)+n]
		if err == io.EOF {
			in.eof = true
		} else if err != nil {
			in.rerr = err
		}
	}
}

// Grow makes room for more bytes in buf (it is full, and holds one
// unfinished feature or record from from).
func (in *input) Grow(from int) {
	n := len(in.Buf) - from
	// A buffer grows fourfold: a large feature leaves a third of its
	// size behind in smaller buffers, not all of it.
	c := max(4*cap(in.Buf), in.Size)
	if in.Limit > 0 && c > in.Limit/2 {
		// Near the limit: this buffer is the last, as large as the
		// limit allows.
		c = in.Limit
	}
	if in.FileSize > 0 {
		c = int(min(int64(c), in.FileSize-in.base-int64(from)+1))
	}
	c = max(c, n+1)
	nb := make([]byte, n, c)
	copy(nb, in.Buf[from:])
	putBuf(in.Buf)
	in.Buf = nb
	in.base += int64(from)
}

// stop ends the batch b at buf[:at], the input with it: what follows is
// never read (not copied either: it may be a feature over the limit).
func (in *input) stop(b *batch, at int) {
	b.buf, b.base = in.Buf[:at], in.base
	in.Buf = nil
}

// cut ends the batch b at buf[:at] and carries buf[at:] into a new
// buffer for the next batch.
func (in *input) cut(b *batch, at int) {
	b.buf, b.base = in.Buf[:at], in.base
	rest := in.Buf[at:]
	nb := getBuf(in.Size)
	if cap(nb) < len(rest) {
		nb = make([]byte, 0, len(rest)+in.Size)
	}
	in.Buf = append(nb, rest...)
	in.base += int64(at)
}

// syntaxErr is a syntax error as encoding/json words it.
func syntaxErr(msg string) error { return errors.New(msg) }

// collection splitter states.
const (
	stFirst = iota // after '[': an element or ']'
	stNext         // after ',': an element
	stAfter        // after an element: ',' or ']'
	stDone
)

// collSplitter splits the features array of a FeatureCollection, from
// just after its '[', then checks what follows the array with tail.
type collSplitter struct {
	in       input
	maxItems int // features per batch
	state    int
	idx      int64 // Index of the next feature
	// maxRec is Limits.MaxRecordBytes; a feature may exceed it by
	// decoderSlack, as it could when the limit counted encoding/json's
	// buffered reads.
	maxRec int64
	// errAt makes the error for a problem at file offset off, in
	// feature idx (-1: not in a feature).
	errAt func(idx, off int64, problem string, err error) error
	// tooLarge makes the error for feature idx over maxRec.
	tooLarge func(idx int64) error
	// tail checks the rest of the file after the features array: rest
	// (at file offset off) and then rd.
	tail func(rest []byte, off int64, rd io.Reader) error
}

func (s *collSplitter) split(b *batch) {
	b.first = s.idx
	in := &s.in
	in.fill()
	pos := 0
	fail := func(idx int64, off int, problem string, err error) {
		if err == ErrRecordTooLarge {
			b.err = s.tooLarge(idx)
		} else {
			b.err = s.errAt(idx, in.base+int64(off), problem, err)
		}
		s.state = stDone
		in.stop(b, pos)
	}
	for s.state != stDone {
		if len(b.spans) >= s.maxItems {
			in.cut(b, pos)
			return
		}
		buf := in.Buf
		restart := pos
		inElem := s.state == stNext // a comma commits to an element
		switch s.state {
		case stFirst, stNext:
			pos = jsonscan.SkipSpace(buf, pos)
			if pos == len(buf) {
				break
			}
			c := buf[pos]
			if s.state == stFirst && (c == ']' || c == '}') {
				if c == '}' {
					fail(-1, pos, "invalid json", syntaxErr("invalid character '}' looking for beginning of value"))
					return
				}
				s.end(b, pos+1)
				return
			}
			inElem = true
			var end int
			switch {
			case c == '{' || c == '[':
				end = jsonscan.SkipNested(buf, pos)
			case c == '"':
				end = jsonscan.SkipStringRaw(buf, pos)
			default:
				end = jsonscan.ScalarEnd(buf, pos, in.eof)
			}
			if end < 0 {
				if int64(len(buf)-pos) > s.maxRec+decoderSlack {
					fail(s.idx, pos, fmt.Sprintf("invalid json: a feature exceeds %d bytes", s.maxRec), ErrRecordTooLarge)
					return
				}
				pos = restart
				break
			}
			if int64(end-pos) > s.maxRec+decoderSlack {
				fail(s.idx, pos, fmt.Sprintf("invalid json: a feature exceeds %d bytes", s.maxRec), ErrRecordTooLarge)
				return
			}
			b.spans = append(b.spans, span{pos, end})
			s.idx++
			pos = end
			s.state = stAfter
			continue
		case stAfter:
			pos = jsonscan.SkipSpace(buf, pos)
			if pos == len(buf) {
				break
			}
			switch buf[pos] {
			case ',':
				pos++
				s.state = stNext
			case ']':
				s.end(b, pos+1)
				return
			case '}':
				fail(-1, pos, "invalid json", syntaxErr("invalid character '}' after array element"))
				return
			default:
				fail(s.idx, pos, "invalid json", syntaxErr("expected comma after array element"))
				return
			}
			continue
		}
		// The buffer ends before the element (or the separator) does.
		if in.rerr != nil {
			fail(-1, pos, "read", in.rerr)
			return
		}
		if in.eof {
			idx := s.idx
			if !inElem {
				idx = -1
			}
			fail(idx, len(buf), "invalid json", io.ErrUnexpectedEOF)
			return
		}
		if len(b.spans) > 0 {
			in.cut(b, restart)
			return
		}
		// Nothing to hand out yet: the pending bytes are all of one
		// unfinished element; read more of it.
		if len(buf) == cap(buf) {
			in.Grow(restart)
			pos = 0
		} else {
			pos = restart
		}
		in.fill()
	}
}

// end ends the features array at in.buf[at] (just past its ']'), checks
// the tail and ends the input.
func (s *collSplitter) end(b *batch, at int) {
	in := &s.in
	s.state = stDone
	rest := in.Buf[at:]
	b.err = s.tail(rest, in.base+int64(at), in.rd)
	b.end = b.err == nil
	in.cut(b, at)
	putBuf(in.Buf)
	in.Buf = nil
}

// seqSplitter splits a GeoJSON text sequence into records: the bytes up
// to each newline or RS (0x1E), skipping blank records.
type seqSplitter struct {
	in       input
	maxItems int // records per batch
	idx      int64
	maxRec   int64
	done     bool
	errAt    func(idx, off int64, err error) error
	tooLarge func(idx int64) error // the error for record idx over maxRec
}

// nextDelim returns the index of the first newline or RS in b, or -1.
func nextDelim(b []byte) int {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		nl = len(b)
	}
	if rs := bytes.IndexByte(b[:nl], 0x1E); rs >= 0 {
		return rs
	}
	if nl == len(b) {
		return -1
	}
	return nl
}

func (s *seqSplitter) split(b *batch) {
	b.first = s.idx
	in := &s.in
	in.fill()
	pos := 0
	for !s.done {
		if len(b.spans) >= s.maxItems {
			in.cut(b, pos)
			return
		}
		buf := in.Buf
		d := nextDelim(buf[pos:])
		if d >= 0 || in.eof && pos < len(buf) {
			end := len(buf)
			if d >= 0 {
				end = pos + d
			}
			if int64(end-pos) > s.maxRec {
				s.fail(b, pos, ErrRecordTooLarge)
				return
			}
			rec := buf[pos:end]
			if d < 0 || len(bytes.TrimSpace(rec)) > 0 {
				// The last record, with no delimiter after it, is a
				// record even when blank.
				b.spans = append(b.spans, span{pos, end})
				s.idx++
			}
			if d < 0 {
				pos = end
			} else {
				pos = end + 1
			}
			continue
		}
		if int64(len(buf)-pos) > s.maxRec {
			s.fail(b, pos, ErrRecordTooLarge)
			return
		}
		if in.rerr != nil {
			s.fail(b, pos, in.rerr)
			return
		}
		if in.eof {
			s.done = true
			b.end = true
			in.cut(b, pos)
			putBuf(in.Buf)
			in.Buf = nil
			return
		}
		if len(b.spans) > 0 {
			in.cut(b, pos)
			return
		}
		if len(buf) == cap(buf) {
			in.Grow(pos)
			pos = 0
		}
		in.fill()
	}
}

func (s *seqSplitter) fail(b *batch, pos int, err error) {
	if err == ErrRecordTooLarge {
		b.err = s.tooLarge(s.idx)
	} else {
		b.err = s.errAt(s.idx, s.in.base+int64(pos), err)
	}
	s.done = true
	s.in.stop(b, pos)
}
