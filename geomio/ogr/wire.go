//go:build cgo && !geoingest_nogdal

package ogr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The framing between the parent and its reading child, over two pipes:
// each frame is one byte of type, four bytes of payload length
// (little-endian) and the payload, whose fields are unsigned or zig-zag
// varints, float64 bits and length-prefixed byte strings. The parent
// sends msgOpen once, then msgRead for each layer it reads and msgClose;
// the child answers msgOpen with msgOpened (or msgError) and a msgRead
// with one msgFeature (or msgOversize) per feature, then msgEnd (or
// msgError).
const (
	msgOpen     byte = 1 // parent: path, drivers, options, containment
	msgRead     byte = 2 // parent: layer, geometry field, swap
	msgClose    byte = 3 // parent: close the dataset and exit
	msgOpened   byte = 4 // child: driver, open error, protections, layers
	msgFeature  byte = 5 // child: one feature
	msgOversize byte = 6 // child: a feature over the byte limit, not sent
	msgEnd      byte = 7 // child: the layer's end
	msgError    byte = 8 // child: GDAL's error (open, or reading a feature)
)

// frameOverhead bounds a frame's bytes beyond a feature's geometry and
// strings: its header and the encoding of its fields' numbers.
const frameOverhead = 1 << 20

type wbuf struct{ b []byte }

func (w *wbuf) reset()        { w.b = w.b[:0] }
func (w *wbuf) u8(v byte)     { w.b = append(w.b, v) }
func (w *wbuf) uv(v uint64)   { w.b = binary.AppendUvarint(w.b, v) }
func (w *wbuf) iv(v int64)    { w.b = binary.AppendVarint(w.b, v) }
func (w *wbuf) f64(v float64) { w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v)) }
func (w *wbuf) bytes(v []byte) {
	w.uv(uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *wbuf) str(v string) {
	w.uv(uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *wbuf) strs(v []string) {
	w.uv(uint64(len(v)))
	for _, s := range v {
		w.str(s)
	}
}
func (w *wbuf) bool(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

// writeFrame writes one frame of type t with payload p.
func writeFrame(out io.Writer, t byte, p []byte) error {
	var h [5]byte
	h[0] = t
	binary.LittleEndian.PutUint32(h[1:], uint32(len(p)))
	if _, err := out.Write(h[:]); err != nil {
		return err
	}
	_, err := out.Write(p)
	return err
}

// readFrame reads one frame into buf (grown as needed), refusing a
// payload of more than max bytes.
func readFrame(in io.Reader, buf []byte, max int64) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(in, h[:]); err != nil {
		return 0, buf, err
	}
	n := int64(binary.LittleEndian.Uint32(h[1:]))
	if n > max {
		return 0, buf, fmt.Errorf("frame of %d bytes, more than %d", n, max)
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(in, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, buf, err
	}
	return h[0], buf, nil
}

var errShort = errors.New("truncated frame")

// rbuf decodes a payload; the first error sticks.
type rbuf struct {
	b   []byte
	err error
}

func (r *rbuf) u8() byte {
	if len(r.b) < 1 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}
func (r *rbuf) uv() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}
func (r *rbuf) iv() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}
func (r *rbuf) f64() float64 {
	if len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// bytes is a length-prefixed byte string, aliasing the payload.
func (r *rbuf) bytes() []byte {
	n := r.uv()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}
func (r *rbuf) str() string { return string(r.bytes()) }
func (r *rbuf) strs() []string {
	n := r.uv()
	if n > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	var out []string
	for i := uint64(0); i < n && r.err == nil; i++ {
		out = append(out, r.str())
	}
	return out
}
func (r *rbuf) bool() bool { return r.u8() != 0 }
