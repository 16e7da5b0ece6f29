package kml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"

	"github.com/twpayne/go-geom"
)

// Value is one field's value in a placemark: its text, when set.
type Value struct {
	Set  bool
	Text string
}

// LayerReader reads one layer's placemarks, one at a time.
type LayerReader struct {
	doc  *Doc
	info *LayerInfo
	t    *tokens
	idx  int64 // placemarks read
	ord  int64 // feature children of a kml-element root seen
	err  error
	done bool

	// The current placemark.
	Geom     geom.T // nil: none (or empty)
	DroppedZ bool   // its coordinates had altitudes, dropped
	Values   []Value
	Line     int

	text    []byte
	coords  []float64
	pending []Value // an ExtendedData's Data values, kept unless it has SchemaData
	verts   int64
	geomAt  bool // tessellate, extrude and altitudeMode taken from the first geometry
}

// Layer starts reading layer i of the document.
func (doc *Doc) Layer(i int) (*LayerReader, error) {
	info := &doc.Layers[i]
	r := &LayerReader{doc: doc, info: info, Values: make([]Value, len(info.Fields))}
	if info.Placemarks == 0 {
		r.done = true // nothing to read (and a <Folder/> has no content to start at)
		return r, nil
	}
	if doc.utf8 {
		// From just after the container's start tag: no declaration to
		// read, and prefixes need no namespaces (names are matched by
		// their local part).
		sr := io.NewSectionReader(doc.src, doc.bom+info.offset, doc.size-doc.bom-info.offset)
		r.t = newTokens(sr, doc.lim, true, info.line, nil)
		return r, nil
	}
	// Another encoding: offsets are the decoder's, in decoded text, so
	// the document is read again from its start to the container's.
	r.t = newTokens(io.NewSectionReader(doc.src, doc.bom, doc.size-doc.bom), doc.lim, false, 1, nil)
	for {
		tok, err := r.t.next()
		if err != nil {
			return nil, r.wrap(eofIsUnexpected(err))
		}
		if _, ok := tok.(xml.StartElement); ok && r.t.d.InputOffset() == info.offset {
			r.t.depth = 0
			return r, nil
		}
	}
}

func (r *LayerReader) wrap(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Line: r.t.lineNo(), Err: err}
	}
	e.Layer = r.info.Name
	e.Index = -1
	return e
}

// Index is the current placemark's 0-based position in the layer.
func (r *LayerReader) Index() int64 { return r.idx - 1 }

// Err is the error that ended Next, if any.
func (r *LayerReader) Err() error { return r.err }

// Next reads the next placemark of the layer.
func (r *LayerReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	for {
		tok, err := r.t.next()
		if err != nil {
			r.err = r.wrap(eofIsUnexpected(err))
			return false
		}
		switch tk := tok.(type) {
		case xml.EndElement:
			if r.t.depth < 0 { // the container's end
				r.done = true
				return false
			}
		case xml.StartElement:
			if r.info.kmlRoot && isFeature(tk.Name.Local) {
				r.ord++
				if r.ord-1 != r.info.only {
					if err := r.t.skip(); err != nil {
						r.err = r.wrap(err)
						return false
					}
					continue
				}
			}
			if !isItem(tk.Name.Local) {
				if err := r.t.skip(); err != nil {
					r.err = r.wrap(err)
					return false
				}
				continue
			}
			r.idx++
			if err := r.placemark(); err != nil {
				var e *Error
				if !errors.As(err, &e) {
					e = &Error{Line: r.t.lineNo(), Err: err}
				}
				e.Layer, e.Index = r.info.Name, r.idx-1
				r.err = e
				return false
			}
			return true
		}
	}
}

// placemark reads the placemark whose start was just read.
func (r *LayerReader) placemark() error {
	start := r.t.d.InputOffset()
	r.Line = r.t.lineNo()
	for i := range r.Values {
		r.Values[i] = Value{}
	}
	// GDAL's value when the placemark does not set it.
	r.Values[fVisibility] = Value{Set: true, Text: "-1"}
	r.Geom, r.DroppedZ, r.verts, r.geomAt = nil, false, 0, false
	sawGeom := false
	for {
		tok, err := r.t.next()
		if err != nil {
			return eofIsUnexpected(err)
		}
		if _, ok := tok.(xml.EndElement); ok {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "name":
			err = r.setText(fName)
		case "description":
			err = r.setText(fDescription)
		case "visibility":
			err = r.setText(fVisibility)
		case "TimeStamp":
			err = r.children(func(se xml.StartElement) error {
				if se.Name.Local == "when" {
					return r.setText(fTimestamp)
				}
				return r.t.skip()
			})
		case "TimeSpan":
			err = r.children(func(se xml.StartElement) error {
				switch se.Name.Local {
				case "begin":
					return r.setText(fBegin)
				case "end":
					return r.setText(fEnd)
				}
				return r.t.skip()
			})
		case "ExtendedData":
			err = r.extendedData()
		case "drawOrder":
			err = r.setText(fDrawOrder)
		case "Icon":
			err = r.children(func(c xml.StartElement) error {
				if c.Name.Local == "href" {
					return r.setText(fIcon)
				}
				return r.t.skip()
			})
		case "LatLonBox":
			// A GroundOverlay's box, as GDAL makes it a polygon (at
			// altitude 0, so said dropped); its rotation is ignored.
			sawGeom = false
			r.Geom, err = r.latLonBox()
			r.DroppedZ = true
		case "LatLonQuad":
			sawGeom = false
			var flat []float64
			err = r.children(func(c xml.StartElement) error {
				if c.Name.Local == "coordinates" {
					var err error
					flat, err = r.coordinates()
					return err
				}
				return r.t.skip()
			})
			if err == nil && len(flat) >= 2 {
				flat = append(flat, flat[0], flat[1])
				r.Geom = geom.NewPolygonFlat(geom.XY, flat, []int{len(flat)})
			}
		case "Point", "LineString", "LinearRing", "Polygon", "MultiGeometry", "Track", "MultiTrack":
			if sawGeom { // libkml keeps one geometry: the last
				r.verts = 0
			}
			sawGeom = true
			r.Geom, err = r.geometry(se)
		default:
			err = r.t.skip()
		}
		if err != nil {
			return err
		}
	}
	if max := r.doc.lim.MaxTokenBytes; max > 0 && r.t.d.InputOffset()-start > max {
		return &LimitError{Limit: "token-bytes", Max: max, What: fmt.Sprintf("more than %d bytes in one placemark", max)}
	}
	if sawGeom { // GDAL's values when the geometry does not set them
		if !r.Values[fTessellate].Set {
			r.Values[fTessellate] = Value{Set: true, Text: "-1"}
		}
		if !r.Values[fExtrude].Set {
			r.Values[fExtrude] = Value{Set: true, Text: "0"}
		}
	}
	return nil
}

// latLonBox reads a LatLonBox as the ring east,north east,south
// west,south west,north east,north.
func (r *LayerReader) latLonBox() (geom.T, error) {
	var n, s, e, w float64
	err := r.children(func(c xml.StartElement) error {
		var p *float64
		switch c.Name.Local {
		case "north":
			p = &n
		case "south":
			p = &s
		case "east":
			p = &e
		case "west":
			p = &w
		default:
			return r.t.skip()
		}
		var err error
		if r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes); err != nil {
			return err
		}
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(r.text)), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("LatLonBox: invalid %s %q", c.Name.Local, clip(r.text))
		}
		*p = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.vertex(); err != nil {
		return nil, err
	}
	return geom.NewPolygonFlat(geom.XY, []float64{e, n, e, s, w, s, w, n, e, n}, []int{10}), nil
}

// children calls f on each child element of the element just started,
// consuming it; f must consume the child.
func (r *LayerReader) children(f func(xml.StartElement) error) error {
	for {
		tok, err := r.t.next()
		if err != nil {
			return eofIsUnexpected(err)
		}
		switch tk := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if err := f(tk); err != nil {
				return err
			}
		}
	}
}

// setText sets field i to the text of the element just started.
func (r *LayerReader) setText(i int) error {
	var err error
	r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes)
	if err != nil {
		return err
	}
	r.Values[i] = Value{Set: true, Text: string(r.text)}
	return nil
}

func (r *LayerReader) setField(name string) error {
	var err error
	r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes)
	if err != nil {
		return err
	}
	if i, ok := r.info.fieldIdx[name]; ok {
		r.Values[i] = Value{Set: true, Text: string(r.text)}
	}
	return nil
}

// extendedData reads an ExtendedData's values, as GDAL does: its
// SimpleData when it has SchemaData, else its Data.
func (r *LayerReader) extendedData() error {
	if r.pending == nil {
		r.pending = make([]Value, len(r.Values))
	}
	clear(r.pending)
	hasSchemaData := false
	err := r.children(func(se xml.StartElement) error {
		switch se.Name.Local {
		case "Data":
			name := attr(se, "name")
			return r.children(func(c xml.StartElement) error {
				if c.Name.Local != "value" || name == "" {
					return r.t.skip()
				}
				var err error
				if r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes); err != nil {
					return err
				}
				if i, ok := r.info.fieldIdx[name]; ok {
					r.pending[i] = Value{Set: true, Text: string(r.text)}
				}
				return nil
			})
		case "SchemaData":
			hasSchemaData = true
			return r.children(func(c xml.StartElement) error {
				if name := attr(c, "name"); c.Name.Local == "SimpleData" && name != "" {
					return r.setField(name)
				}
				return r.t.skip()
			})
		}
		return r.t.skip()
	})
	if !hasSchemaData {
		for i, v := range r.pending {
			if v.Set {
				r.Values[i] = v
			}
		}
	}
	return err
}

// geometry reads the geometry element se: a Point, LineString or
// LinearRing (a LineString), Polygon, MultiGeometry (a MultiPoint,
// MultiLineString or MultiPolygon when its members are all of one such
// kind, else a GeometryCollection), or gx:Track and gx:MultiTrack
// (lines). Altitudes are dropped (DroppedZ). An empty geometry is nil.
func (r *LayerReader) geometry(se xml.StartElement) (geom.T, error) {
	switch se.Name.Local {
	case "Point":
		flat, err := r.simple()
		if err != nil || len(flat) < 2 {
			return nil, err
		}
		return geom.NewPointFlat(geom.XY, flat[:2]), nil
	case "LineString", "LinearRing":
		flat, err := r.simple()
		if err != nil || len(flat) == 0 {
			return nil, err
		}
		return geom.NewLineStringFlat(geom.XY, flat), nil
	case "Polygon":
		return r.polygon()
	case "Track":
		flat, err := r.track()
		if err != nil || len(flat) == 0 {
			return nil, err
		}
		return geom.NewLineStringFlat(geom.XY, flat), nil
	case "MultiGeometry", "MultiTrack":
		var parts []geom.T
		err := r.children(func(c xml.StartElement) error {
			switch c.Name.Local {
			case "Point", "LineString", "LinearRing", "Polygon", "MultiGeometry", "Track", "MultiTrack":
				g, err := r.geometry(c)
				if g != nil {
					parts = append(parts, g)
				}
				return err
			}
			return r.t.skip()
		})
		if err != nil || len(parts) == 0 {
			return nil, err
		}
		return collect(parts), nil
	}
	return nil, r.t.skip()
}

// collect makes the multi-geometry of parts.
func collect(parts []geom.T) geom.T {
	same := true
	for _, p := range parts[1:] {
		if reflect.TypeOf(p) != reflect.TypeOf(parts[0]) {
			same = false
		}
	}
	if same {
		switch parts[0].(type) {
		case *geom.Point:
			mp := geom.NewMultiPoint(geom.XY)
			for _, p := range parts {
				_ = mp.Push(p.(*geom.Point))
			}
			return mp
		case *geom.LineString:
			ml := geom.NewMultiLineString(geom.XY)
			for _, p := range parts {
				_ = ml.Push(p.(*geom.LineString))
			}
			return ml
		case *geom.Polygon:
			mp := geom.NewMultiPolygon(geom.XY)
			for _, p := range parts {
				_ = mp.Push(p.(*geom.Polygon))
			}
			return mp
		}
	}
	gc := geom.NewGeometryCollection()
	_ = gc.Push(parts...)
	return gc
}

// simple reads a Point's, LineString's or LinearRing's coordinates (and
// the placemark's tessellate, extrude and altitudeMode, from its first
// geometry), returning a new flat XY slice.
func (r *LayerReader) simple() ([]float64, error) {
	var flat []float64
	first := !r.geomAt
	r.geomAt = true
	err := r.children(func(c xml.StartElement) error {
		switch c.Name.Local {
		case "coordinates":
			var err error
			flat, err = r.coordinates()
			return err
		case "tessellate", "extrude", "altitudeMode":
			if first {
				return r.setText(map[string]int{"tessellate": fTessellate, "extrude": fExtrude, "altitudeMode": fAltitudeMode}[c.Name.Local])
			}
		}
		return r.t.skip()
	})
	return flat, err
}

// polygon reads a Polygon: its outer ring and inner rings (libkml keeps
// the last LinearRing of each boundary element).
func (r *LayerReader) polygon() (geom.T, error) {
	var outer []float64
	var inners [][]float64
	first := !r.geomAt
	r.geomAt = true
	ring := func() ([]float64, error) {
		var flat []float64
		err := r.children(func(c xml.StartElement) error {
			if c.Name.Local == "LinearRing" {
				var err error
				flat, err = r.simple()
				return err
			}
			return r.t.skip()
		})
		return flat, err
	}
	err := r.children(func(c xml.StartElement) error {
		switch c.Name.Local {
		case "outerBoundaryIs":
			var err error
			outer, err = ring()
			return err
		case "innerBoundaryIs":
			in, err := ring()
			if len(in) > 0 {
				inners = append(inners, in)
			}
			return err
		case "tessellate", "extrude", "altitudeMode":
			if first {
				return r.setText(map[string]int{"tessellate": fTessellate, "extrude": fExtrude, "altitudeMode": fAltitudeMode}[c.Name.Local])
			}
		}
		return r.t.skip()
	})
	if err != nil || len(outer) == 0 {
		return nil, err
	}
	flat := outer
	ends := []int{len(flat)}
	for _, in := range inners {
		flat = append(flat, in...)
		ends = append(ends, len(flat))
	}
	return geom.NewPolygonFlat(geom.XY, flat, ends), nil
}

// track reads a gx:Track's gx:coord positions ("lon lat alt").
func (r *LayerReader) track() ([]float64, error) {
	var flat []float64
	err := r.children(func(c xml.StartElement) error {
		if c.Name.Local != "coord" {
			return r.t.skip()
		}
		var err error
		if r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes); err != nil {
			return err
		}
		var nums [3]float64
		n := 0
		for _, f := range fieldsOf(r.text) {
			if n == 3 {
				return errors.New("gx:coord with more than 3 numbers")
			}
			v, err := strconv.ParseFloat(string(f), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("gx:coord: invalid number %q", clip(f))
			}
			nums[n] = v
			n++
		}
		if n < 2 {
			return errors.New("gx:coord with fewer than 2 numbers")
		}
		if n == 3 {
			r.DroppedZ = true
		}
		if err := r.vertex(); err != nil {
			return err
		}
		flat = append(flat, nums[0], nums[1])
		return nil
	})
	return flat, err
}

func (r *LayerReader) vertex() error {
	if r.verts++; r.doc.lim.MaxVertices > 0 && r.verts > r.doc.lim.MaxVertices {
		return &LimitError{Limit: "vertices", Max: r.doc.lim.MaxVertices, What: fmt.Sprintf("more than %d vertices", r.doc.lim.MaxVertices)}
	}
	return nil
}

// coordinates reads a coordinates element: tuples lon,lat[,alt]
// separated by blanks, with blanks allowed around the commas.
func (r *LayerReader) coordinates() ([]float64, error) {
	var err error
	if r.text, err = r.t.text(r.text, r.doc.lim.MaxTokenBytes); err != nil {
		return nil, err
	}
	b := r.text
	flat := r.coords[:0]
	var tuple [3]float64
	n := 0
	end := func() error {
		switch {
		case n == 0:
			return nil
		case n == 1:
			return errors.New("coordinates: a tuple with one number (lon,lat[,alt] expected)")
		case n == 3:
			r.DroppedZ = true
		}
		if err := r.vertex(); err != nil {
			return err
		}
		flat = append(flat, tuple[0], tuple[1])
		n = 0
		return nil
	}
	for i := 0; i < len(b); {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		if i >= len(b) {
			break
		}
		if b[i] == ',' {
			if n == 0 {
				return nil, errors.New("coordinates: a comma with no number before it")
			}
			i++
			for i < len(b) && isBlank(b[i]) {
				i++
			}
			if i >= len(b) || b[i] == ',' {
				return nil, errors.New("coordinates: a comma with no number after it")
			}
		} else if err := end(); err != nil { // a blank, no comma: a new tuple
			return nil, err
		}
		j := i
		for j < len(b) && !isBlank(b[j]) && b[j] != ',' {
			j++
		}
		if n == 3 {
			return nil, errors.New("coordinates: a tuple with more than 3 numbers")
		}
		v, err := strconv.ParseFloat(string(b[i:j]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("coordinates: invalid number %q", clip(b[i:j]))
		}
		tuple[n] = v
		n++
		i = j
	}
	if err := end(); err != nil {
		return nil, err
	}
	r.coords = flat
	return append([]float64(nil), flat...), nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func fieldsOf(b []byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(b); {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		j := i
		for j < len(b) && !isBlank(b[j]) {
			j++
		}
		if j > i {
			out = append(out, b[i:j])
		}
		i = j
	}
	return out
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
