package ogr

import (
	"bufio"
	"encoding/xml"
	"io"
	"strings"
)

// gmlScanFeatures is how many features scanGMLGeometryProperties reads: a
// geometry property that first appears after them is not seen.
const gmlScanFeatures = 10000

// gmlClass is a feature type of a GML file, as scanGMLGeometryProperties
// saw it: its element's local name and its geometry properties, in the
// order of their first appearance.
type gmlClass struct {
	Name  string
	Geoms []gmlGeomProp
}

// gmlGeomProp is a property of a feature whose value is a GML geometry:
// the property element's local name and the OGR type its geometries
// make (gfsGeometryType).
type gmlGeomProp struct {
	Name string
	Type string
}

// scanGMLGeometryProperties reads the GML document r (at most
// gmlScanFeatures features) and returns its feature types with their
// geometry properties. A feature is an element directly inside a
// featureMember, featureMembers or member element (GML 2, GML 3, WFS 2)
// that is not itself inside a feature; a geometry property is a child of
// a feature whose first child element is in a GML namespace and names a
// geometry (Polygon, MultiSurface, Point, ...). It reads one token at a
// time (constant memory but for one token's text) and stops at the first
// malformed token, returning what it saw: GDAL, which reads the file
// next, reports what is wrong with it.
func scanGMLGeometryProperties(r io.Reader) []gmlClass {
	d := xml.NewDecoder(newRunCapReader(r))
	d.Strict = false
	var classes []gmlClass
	index := map[string]int{}
	var stack []string // local names of the open elements above a feature
	depth := 0         // depth inside the current feature (0: none)
	var class *gmlClass
	prop := ""
	features := 0
	for features < gmlScanFeatures {
		tok, err := d.Token()
		if err != nil {
			break // the end, or a malformed token
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case depth > 0:
				depth++
				if depth == 2 {
					prop = t.Name.Local
				} else if depth == 3 && prop != "" {
					if typ, ok := gmlGeometryType(t.Name); ok {
						class.addGeom(prop, typ)
					}
					prop = ""
				}
			case len(stack) > 0 && isMemberElement(stack[len(stack)-1]):
				depth = 1
				features++
				i, ok := index[t.Name.Local]
				if !ok {
					i = len(classes)
					index[t.Name.Local] = i
					classes = append(classes, gmlClass{Name: t.Name.Local})
				}
				class = &classes[i]
			default:
				stack = append(stack, t.Name.Local)
			}
		case xml.EndElement:
			switch {
			case depth > 0:
				depth--
				if depth == 1 {
					prop = ""
				}
			case len(stack) > 0:
				stack = stack[:len(stack)-1]
			}
		}
	}
	return classes
}

func isMemberElement(local string) bool {
	return local == "featureMember" || local == "featureMembers" || local == "member"
}

func (c *gmlClass) addGeom(prop, typ string) {
	for i := range c.Geoms {
		if c.Geoms[i].Name == prop {
			c.Geoms[i].Type = mergeGeometryTypes(c.Geoms[i].Type, typ)
			return
		}
	}
	c.Geoms = append(c.Geoms, gmlGeomProp{Name: prop, Type: typ})
}

// gmlGeometryType returns the OGR geometry type name (as a .gfs file
// names it) of a GML geometry element, and whether name is one.
func gmlGeometryType(name xml.Name) (string, bool) {
	if !strings.HasPrefix(name.Space, "http://www.opengis.net/gml") {
		return "", false
	}
	switch name.Local {
	case "Polygon", "Surface", "PolygonPatch", "Rectangle", "Triangle":
		return "Polygon", true
	case "MultiPolygon", "MultiSurface", "CompositeSurface", "TopoSurface", "Tin", "TriangulatedSurface", "PolyhedralSurface":
		return "MultiPolygon", true
	case "Point":
		return "Point", true
	case "MultiPoint":
		return "MultiPoint", true
	case "LineString", "Curve", "LineStringSegment", "OrientableCurve":
		return "LineString", true
	case "MultiLineString", "MultiCurve", "CompositeCurve", "TopoCurve":
		return "MultiLineString", true
	case "MultiGeometry", "GeometryCollection", "Solid", "MultiSolid", "CompositeSolid":
		return "GeometryCollection", true
	}
	return "", false
}

// mergeGeometryTypes is the type of a property whose geometries are of
// types a and b: a polygon and a multipolygon make a multipolygon (and so
// for points and lines); other mixes make Unknown (any geometry).
func mergeGeometryTypes(a, b string) string {
	switch {
	case a == b:
		return a
	case strings.TrimPrefix(a, "Multi") == strings.TrimPrefix(b, "Multi"):
		return "Multi" + strings.TrimPrefix(a, "Multi")
	}
	return "Unknown"
}

// gmlScanRun bounds the bytes of one run of text (between a '<' and a
// '>', either way) that the geometry-property scan sees: the first half
// and the last half of a longer run are kept, the middle dropped. The
// scan looks at element names only, and the XML decoder would otherwise
// hold a whole text token (one 200 MB attribute) in the worker's memory.
const gmlScanRun = 8 << 10

// runCapReader is r with every run of text longer than gmlScanRun cut to
// its first and last gmlScanRun/2 bytes.
type runCapReader struct {
	r       *bufio.Reader
	run     int
	ring    []byte // the last bytes of a run being cut
	ringAt  int
	cutting bool
	pending []byte
	err     error
}

func newRunCapReader(r io.Reader) *runCapReader {
	return &runCapReader{r: bufio.NewReaderSize(r, 64<<10), ring: make([]byte, 0, gmlScanRun/2)}
}

// flushRing moves the kept tail of a cut run to pending, in order.
func (c *runCapReader) flushRing() {
	if len(c.ring) == cap(c.ring) {
		c.pending = append(c.pending, c.ring[c.ringAt:]...)
		c.pending = append(c.pending, c.ring[:c.ringAt]...)
	} else {
		c.pending = append(c.pending, c.ring...)
	}
	c.ring, c.ringAt, c.cutting = c.ring[:0], 0, false
}

func (c *runCapReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(c.pending) > 0 {
			k := copy(p[n:], c.pending)
			c.pending = c.pending[k:]
			n += k
			continue
		}
		if c.err != nil {
			break
		}
		b, err := c.r.ReadByte()
		if err != nil {
			c.err = err
			if c.cutting {
				c.flushRing()
			}
			continue
		}
		if b == '<' || b == '>' {
			if c.cutting {
				c.flushRing()
				c.pending = append(c.pending, b)
			} else {
				p[n] = b
				n++
			}
			c.run = 0
			continue
		}
		c.run++
		if c.run <= gmlScanRun/2 {
			p[n] = b
			n++
			continue
		}
		c.cutting = true
		if len(c.ring) < cap(c.ring) {
			c.ring = append(c.ring, b)
		} else {
			c.ring[c.ringAt] = b
			c.ringAt = (c.ringAt + 1) % cap(c.ring)
		}
	}
	if n == 0 && c.err != nil {
		return 0, c.err
	}
	return n, nil
}
