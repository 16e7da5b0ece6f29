package shapefile

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"github.com/twpayne/go-geom"
)

// cw and ccw are squares, clockwise and counter-clockwise.
func cw(x0, y0, x1, y1 float64) []float64 {
	return []float64{x0, y0, x0, y1, x1, y1, x1, y0, x0, y0}
}

func ccw(x0, y0, x1, y1 float64) []float64 {
	return []float64{x0, y0, x1, y0, x1, y1, x0, y1, x0, y0}
}

// polygonRecord encodes rings as a shapefile polygon record's content.
func polygonRecord(rings [][]float64) []byte {
	np := 0
	for _, r := range rings {
		np += len(r) / 2
	}
	b := make([]byte, 44+4*len(rings)+16*np)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 5)
	le.PutUint32(b[36:], uint32(len(rings)))
	le.PutUint32(b[40:], uint32(np))
	off, start := 44+4*len(rings), 0
	for i, r := range rings {
		le.PutUint32(b[44+4*i:], uint32(start))
		for _, v := range r {
			le.PutUint64(b[off:], math.Float64bits(v))
			off += 8
		}
		start += len(r) / 2
	}
	return b
}

// FuzzShapeDecoderReuse: a decoder reused record after record returns what
// a fresh one returns for each record, whatever came before.
func FuzzShapeDecoderReuse(f *testing.F) {
	one := polygonRecord([][]float64{cw(0, 0, 10, 10)})
	holed := polygonRecord([][]float64{cw(0, 0, 100, 100), ccw(10, 10, 90, 90), cw(20, 20, 80, 80), ccw(30, 30, 40, 40)})
	parts := polygonRecord([][]float64{cw(0, 0, 10, 10), cw(20, 0, 30, 10), ccw(22, 2, 24, 4), ccw(50, 50, 51, 51)})
	f.Add(one, holed)
	f.Add(holed, one)
	f.Add(parts, holed)
	f.Add(holed, parts)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var d ShapeDecoder
		for _, rec := range [][]byte{a, b, a} {
			if len(rec) < 4 {
				continue // nextShape passes decode at least the shape type
			}
			want, werr := decodeShape(rec)
			got, gerr := d.Decode(rec)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("errors differ: fresh %v, reused %v", werr, gerr)
			}
			if !reflect.DeepEqual(flatOf(want), flatOf(got)) {
				t.Fatalf("reused decoder: %v, fresh: %v", flatOf(got), flatOf(want))
			}
		}
	})
}

// flatOf is g's type, coordinates and ring ends, for comparison.
func flatOf(g any) []any {
	type flat interface {
		FlatCoords() []float64
	}
	if g == nil || reflect.ValueOf(g).IsNil() {
		return nil
	}
	out := []any{reflect.TypeOf(g).String(), g.(flat).FlatCoords()}
	if e, ok := g.(interface{ Endss() [][]int }); ok {
		out = append(out, e.Endss())
	}
	if e, ok := g.(interface{ Ends() []int }); ok {
		out = append(out, e.Ends())
	}
	return out
}

// decodeShape decodes one record with a fresh decoder: the reference a
// reused one is held to.
func decodeShape(b []byte) (geom.T, error) {
	var d ShapeDecoder
	return d.Decode(b)
}
