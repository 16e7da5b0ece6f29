package prepare

import (
	"encoding/binary"
	"math"

	"github.com/twpayne/go-geom"
)

// EWKB type flags (PostGIS's extended WKB).
const (
	ewkbZ    = 0x80000000
	ewkbM    = 0x40000000
	ewkbSRID = 0x20000000
)

// appendEWKB appends mp to dst as little-endian EWKB, byte for byte what
// go-geom's ewkb.Write(w, ewkb.NDR, mp) writes (the test holds it to that):
// the multipolygon's header with its SRID when it has one, then each
// polygon with a header of its own (type and dimension flags, no SRID),
// its rings and their coordinates. It allocates nothing beyond dst's
// growth: the preparation workers encode every row with it.
func appendEWKB(dst []byte, mp *geom.MultiPolygon) []byte {
	var dims uint32
	switch mp.Layout() {
	case geom.XYZ:
		dims = ewkbZ
	case geom.XYM:
		dims = ewkbM
	case geom.XYZM:
		dims = ewkbZ | ewkbM
	}
	le := binary.LittleEndian
	dst = append(dst, 1)
	if srid := mp.SRID(); srid != 0 {
		dst = le.AppendUint32(dst, 6|dims|ewkbSRID)
		dst = le.AppendUint32(dst, uint32(srid))
	} else {
		dst = le.AppendUint32(dst, 6|dims)
	}
	endss := mp.Endss()
	dst = le.AppendUint32(dst, uint32(len(endss)))
	flat := mp.FlatCoords()
	stride := mp.Stride()
	start := 0
	for _, ends := range endss {
		dst = append(dst, 1)
		dst = le.AppendUint32(dst, 3|dims)
		dst = le.AppendUint32(dst, uint32(len(ends)))
		for _, end := range ends {
			dst = le.AppendUint32(dst, uint32((end-start)/stride))
			for _, v := range flat[start:end] {
				dst = le.AppendUint64(dst, math.Float64bits(v))
			}
			start = end
		}
	}
	return dst
}
