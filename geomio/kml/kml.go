// Package kml reads the placemarks of a KML document as a stream, layer
// by layer, with memory bounded whatever the document's size.
//
// Layers are those GDAL's LIBKML driver (the reader ogr2ogr uses for KML)
// lists: the placemarks directly in the root Document or Folder, named by
// its <name> or else the file's base name, first (when there are any);
// then every Folder and Document below it, in document order (depth
// first), named by its <name> with surrounding blanks trimmed, or
// "Layer<i>" with i the container's position among its parent's features.
// A layer holds the placemarks (and ground overlays, as polygons) directly
// in its container, in document order. ScanLinked reads a document that a
// KMZ's main document links to, as one layer.
//
// Scan makes a first pass over the document that keeps only the layers'
// names, counts and field names; Layer then reads one layer's placemarks
// from where its container starts (for a UTF-8 document; from the start
// for one in another encoding), one placemark at a time. Every token the
// XML decoder builds is bounded (Limits.MaxTokenBytes), and so are the
// element depth (MaxDepth), the positions of one geometry (MaxVertices),
// the layers and each layer's fields.
package kml

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxDepth bounds how deep elements nest: far deeper than any real KML
// (a Document, folders, a Placemark, a MultiGeometry and a Polygon's
// rings), and shallow enough that the decoder's stack stays small.
const MaxDepth = 100

// Limits bound what one document may cost. Zero fields are no limit.
type Limits struct {
	// MaxTokenBytes bounds the bytes of one XML token (a coordinates
	// string, a description, a tag) and of one placemark.
	MaxTokenBytes int64
	// MaxVertices bounds the positions of one placemark's geometry.
	MaxVertices int64
	// MaxLayers bounds the Folders and Documents.
	MaxLayers int
	// MaxFields bounds the ExtendedData fields of one layer.
	MaxFields int
}

// LimitError is a document over one of the Limits (or MaxDepth).
type LimitError struct {
	// Limit is which: "token-bytes", "vertices", "layers", "fields" or
	// "depth".
	Limit string
	Max   int64
	What  string
}

func (e *LimitError) Error() string { return e.What }

// FieldType is the type of a field's values.
type FieldType int

const (
	String FieldType = iota
	Integer
	Real
	Boolean
	DateTime // ISO 8601 text, as the document gives it
)

// Field is one attribute of a layer's placemarks.
type Field struct {
	Name string
	Type FieldType
}

// The fields every layer has first, as GDAL's LIBKML driver names them.
var standardFields = []Field{
	{"Name", String}, {"description", String}, {"timestamp", DateTime}, {"begin", DateTime}, {"end", DateTime},
	{"altitudeMode", String}, {"tessellate", Integer}, {"extrude", Integer}, {"visibility", Integer},
	{"drawOrder", Integer}, {"icon", String},
}

const (
	fName = iota
	fDescription
	fTimestamp
	fBegin
	fEnd
	fAltitudeMode
	fTessellate
	fExtrude
	fVisibility
	fDrawOrder
	fIcon
)

// LayerInfo is one layer, as Scan found it.
type LayerInfo struct {
	Name string
	// Fields are the standard fields, then the layer's ExtendedData
	// fields: its container's Schema fields, then the placemarks'
	// ExtendedData fields in order of first appearance.
	Fields []Field
	// Placemarks counts the placemarks directly in the container.
	Placemarks int64

	offset   int64 // the decoder's offset just after the container's start tag
	line     int   // the line there
	kmlRoot  bool  // the container is the kml element: read only its placemark number only
	only     int64
	named    bool
	fieldIdx map[string]int
}

// Doc is a scanned document: its layers, and how to read them again.
type Doc struct {
	Layers []LayerInfo
	// Encoding is the encoding the document declares ("UTF-8" when none).
	Encoding string
	// Links are the hrefs of the NetworkLinks directly in the root
	// container: in a KMZ, GDAL reads the documents these name within
	// the archive as its layers instead (ScanLinked).
	Links []string
	src   io.ReaderAt
	size  int64
	bom   int64 // bytes of a UTF-8 byte-order mark before the XML
	utf8  bool  // no other encoding declared: layers are read from their offsets
	lim   Limits
	types map[string]FieldType // Schema SimpleField types by field name
	// schemas are the Schemas' fields by id and name; schemaFields
	// counts them all.
	schemas      map[string][]Field
	schemaFields int
}

// A syntax or structure problem is returned as an *Error with the
// position; limits as a *LimitError inside one.
type Error struct {
	Line  int    // 1-based line where it was found, 0 if unknown
	Layer string // the layer being read, if any
	Index int64  // the placemark's 0-based position in the layer, -1 if none
	Err   error
}

func (e *Error) Error() string {
	var parts []string
	if e.Layer != "" {
		parts = append(parts, fmt.Sprintf("layer %q", e.Layer))
	}
	if e.Index >= 0 {
		parts = append(parts, fmt.Sprintf("placemark %d", e.Index))
	}
	if e.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", e.Line))
	}
	if len(parts) == 0 {
		return e.Err.Error()
	}
	return strings.Join(parts, ", ") + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

var errTokenTooLong = errors.New("token too long")

// boundedReader counts the bytes the decoder reads since the last reset
// and fails past max, so that no token the decoder builds (it buffers a
// whole text, comment or tag) is larger than max plus its read-ahead.
type boundedReader struct {
	r   *bufio.Reader
	n   int64
	max int64
}

func (b *boundedReader) ReadByte() (byte, error) {
	if b.max > 0 && b.n >= b.max {
		return 0, errTokenTooLong
	}
	c, err := b.r.ReadByte()
	if err == nil {
		b.n++
	}
	return c, err
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.max > 0 && b.n >= b.max {
		return 0, errTokenTooLong
	}
	if b.max > 0 && int64(len(p)) > b.max-b.n {
		p = p[:b.max-b.n]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *boundedReader) reset() { b.n = 0 }
