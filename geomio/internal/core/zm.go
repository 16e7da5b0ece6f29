package core

import (
	"encoding/binary"

	"github.com/geoingest/geoingest/geomio/jsonscan"
	"github.com/jonas-p/go-shp"
)

// What a file's geometries had beyond X and Y, which the readers drop
// (Feature.DroppedZM).

// ShapeHasZM reports whether a shapefile shape type carries Z or M values.
func ShapeHasZM(t shp.ShapeType) bool {
	switch t {
	case shp.POINTZ, shp.POLYLINEZ, shp.POLYGONZ, shp.MULTIPOINTZ,
		shp.POINTM, shp.POLYLINEM, shp.POLYGONM, shp.MULTIPOINTM, shp.MULTIPATCH:
		return true
	}
	return false
}

// WkbHasZM reports whether the WKB geometry b (ISO or extended) declares
// Z or M coordinates in its type.
func WkbHasZM(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	var t uint32
	switch b[0] {
	case 0:
		t = binary.BigEndian.Uint32(b[1:])
	case 1:
		t = binary.LittleEndian.Uint32(b[1:])
	default:
		return false
	}
	return t&0xC0000000 != 0 || (t&0x0FFFFFFF)/1000 != 0
}

// HasAltitudes reports whether some position of the GeoJSON geometry b
// has more than two numbers (a "bbox" member is not a position).
func HasAltitudes(b []byte) bool {
	var s jsonscan.JsonSkipper
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			start := i
			if i = jsonscan.SkipStringRaw(b, i); i < 0 {
				return false
			}
			if string(b[start:i]) == `"bbox"` {
				if j := jsonscan.SkipSpace(b, i); j < len(b) && b[j] == ':' {
					if i = s.Value(b, jsonscan.SkipSpace(b, j+1), 1); i < 0 {
						return false
					}
				}
			}
		case c == '[':
			j := jsonscan.SkipSpace(b, i+1)
			if j < len(b) && (b[j] == '-' || jsonscan.IsDigit(b[j])) {
				// A position: count its numbers.
				n := 1
				for k := j; k < len(b) && b[k] != ']'; k++ {
					if b[k] == ',' {
						n++
					}
				}
				if n > 2 {
					return true
				}
			}
			i = j
		default:
			i++
		}
	}
	return false
}
