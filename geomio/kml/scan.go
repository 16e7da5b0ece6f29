package kml

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/text/encoding/htmlindex"
)

// tokens is a bounded token stream over a document, or over the rest of
// one from a container's start tag (raw: no declaration, prefixes kept).
type tokens struct {
	d     *xml.Decoder
	br    *boundedReader
	raw   bool
	depth int // elements open, relative to where the stream started
	lim   Limits
	line  int // line of the stream's first byte, for a raw stream
}

func newTokens(r io.Reader, lim Limits, raw bool, line int, charset *string) *tokens {
	br := &boundedReader{r: bufio.NewReaderSize(r, 32<<10), max: lim.MaxTokenBytes}
	d := xml.NewDecoder(br)
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		enc, err := htmlindex.Get(label)
		if err != nil {
			return nil, fmt.Errorf("unsupported encoding %q", label)
		}
		if charset != nil {
			*charset = label
		}
		return enc.NewDecoder().Reader(in), nil
	}
	return &tokens{d: d, br: br, raw: raw, lim: lim, line: line}
}

// next returns the next token. CharData is valid until the next call.
func (t *tokens) next() (xml.Token, error) {
	t.br.reset()
	var tok xml.Token
	var err error
	if t.raw {
		tok, err = t.d.RawToken()
	} else {
		tok, err = t.d.Token()
	}
	if err != nil {
		if errors.Is(err, errTokenTooLong) {
			return nil, t.errAt(&LimitError{Limit: "token-bytes", Max: t.lim.MaxTokenBytes,
				What: fmt.Sprintf("more than %d bytes in one XML token (a text, a tag or a comment)", t.lim.MaxTokenBytes)})
		}
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, t.errAt(err)
	}
	switch tok.(type) {
	case xml.StartElement:
		if t.depth++; t.depth > MaxDepth {
			return nil, t.errAt(&LimitError{Limit: "depth", Max: MaxDepth, What: fmt.Sprintf("elements nested more than %d deep", MaxDepth)})
		}
	case xml.EndElement:
		t.depth--
	}
	return tok, nil
}

// lineNo is the line the decoder is at in the document.
func (t *tokens) lineNo() int {
	l, _ := t.d.InputPos()
	return t.line + l - 1
}

func (t *tokens) errAt(err error) error {
	return &Error{Line: t.lineNo(), Index: -1, Err: err}
}

// skip consumes the rest of the element whose start was just read.
func (t *tokens) skip() error {
	for d := 1; d > 0; {
		tok, err := t.next()
		if err != nil {
			return eofIsUnexpected(err)
		}
		switch tok.(type) {
		case xml.StartElement:
			d++
		case xml.EndElement:
			d--
		}
	}
	return nil
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// text returns the character data of the element whose start was just
// read (nested elements' text included), consuming it; at most max bytes.
func (t *tokens) text(buf []byte, max int64) ([]byte, error) {
	buf = buf[:0]
	for d := 1; d > 0; {
		tok, err := t.next()
		if err != nil {
			return buf, eofIsUnexpected(err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			d++
		case xml.EndElement:
			d--
		case xml.CharData:
			if max > 0 && int64(len(buf)+len(tk)) > max {
				return buf, t.errAt(&LimitError{Limit: "token-bytes", Max: max, What: fmt.Sprintf("more than %d bytes of text in one element", max)})
			}
			buf = append(buf, tk...)
		}
	}
	return buf, nil
}

// isItem reports whether an element is a feature GDAL reads as a layer's
// feature: a Placemark, or a GroundOverlay (its LatLonBox or
// gx:LatLonQuad as a polygon).
func isItem(local string) bool { return local == "Placemark" || local == "GroundOverlay" }

func isContainer(local string) bool { return local == "Document" || local == "Folder" }

// isFeature reports whether an element is a KML feature (what a
// container's position counts).
func isFeature(local string) bool {
	switch local {
	case "Placemark", "Document", "Folder", "GroundOverlay", "ScreenOverlay", "PhotoOverlay", "NetworkLink":
		return true
	}
	return false
}

const (
	kKML = iota
	kContainer
)

// frame is an open element of the first pass that can hold layers.
type frame struct {
	kind     int
	layer    int // index in Doc.Layers (kContainer), or of a root on the kml element
	features int // feature children so far
}

// Scan makes the first pass over the KML document in src (size bytes):
// the layers, their placemark counts and fields, and Links. base names a
// root container without a name (the file's name without extension).
func Scan(src io.ReaderAt, size int64, base string, lim Limits) (*Doc, error) {
	return scan(src, size, base, lim, false)
}

// ScanLinked scans a document that a KMZ's main document links to
// (Doc.Links), as GDAL reads one: a single layer named name, the
// placemarks directly in its root container (its folders are not read).
func ScanLinked(src io.ReaderAt, size int64, name string, lim Limits) (*Doc, error) {
	return scan(src, size, name, lim, true)
}

func scan(src io.ReaderAt, size int64, base string, lim Limits, linked bool) (*Doc, error) {
	doc := &Doc{src: src, size: size, lim: lim, types: map[string]FieldType{}, schemas: map[string][]Field{}}
	var head [3]byte
	if n, _ := src.ReadAt(head[:], 0); n == 3 && bytes.Equal(head[:], []byte{0xEF, 0xBB, 0xBF}) {
		doc.bom = 3
	}
	var charset string
	t := newTokens(io.NewSectionReader(src, doc.bom, size-doc.bom), lim, false, 1, &charset)
	var stack []frame
	var layers []LayerInfo // [0] is the root's, named base until told
	rootKML := -1          // a root layer on the kml element itself (a lone Placemark)
	var kmlAt LayerInfo    // where the kml element's content starts
	var kmlFeatures int64  // feature children of the kml element so far
	rootOther := 0         // the root's features that are neither containers nor placemarks
	var nameBuf []byte
	sawRoot := false
	for {
		tok, err := t.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tk := tok.(type) {
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		case xml.StartElement:
			local := tk.Name.Local
			if len(stack) == 0 {
				if sawRoot {
					return nil, t.errAt(errors.New("more than one root element"))
				}
				sawRoot = true
				switch {
				case local == "kml":
					stack = append(stack, frame{kind: kKML, layer: -1})
					kmlAt = doc.newLayer(base, t)
				case isContainer(local):
					layers = append(layers, doc.newLayer(base, t))
					stack = append(stack, frame{kind: kContainer, layer: 0})
				default:
					return nil, t.errAt(fmt.Errorf("not a KML document: the root element is <%s>, not <kml>", local))
				}
				continue
			}
			p := &stack[len(stack)-1]
			switch {
			case p.kind == kKML && isContainer(local):
				// libkml keeps the kml element's last feature.
				kmlFeatures++
				layers, rootKML, rootOther = layers[:0], -1, 0
				layers = append(layers, doc.newLayer(base, t))
				stack = append(stack, frame{kind: kContainer, layer: 0})
			case p.kind == kKML && isItem(local):
				layers, rootKML = layers[:0], 0
				l := kmlAt
				l.kmlRoot, l.only = true, kmlFeatures
				kmlFeatures++
				layers = append(layers, l)
				layers[0].Placemarks = 1
				if err := doc.scanPlacemark(t, &layers[0]); err != nil {
					return nil, inPlacemark(err, &layers[0])
				}
			case p.kind == kContainer && isContainer(local):
				if len(layers) >= lim.MaxLayers && lim.MaxLayers > 0 {
					return nil, t.errAt(&LimitError{Limit: "layers", Max: int64(lim.MaxLayers), What: fmt.Sprintf("more than %d folders and documents", lim.MaxLayers)})
				}
				l := doc.newLayer(fmt.Sprintf("Layer%d", p.features), t)
				p.features++
				layers = append(layers, l)
				stack = append(stack, frame{kind: kContainer, layer: len(layers) - 1})
			case p.kind == kContainer && isItem(local):
				p.features++
				layers[p.layer].Placemarks++
				if err := doc.scanPlacemark(t, &layers[p.layer]); err != nil {
					return nil, inPlacemark(err, &layers[p.layer])
				}
			case p.kind == kContainer && local == "name" && !layers[p.layer].named:
				if nameBuf, err = t.text(nameBuf, lim.MaxTokenBytes); err != nil {
					return nil, err
				}
				l := &layers[p.layer]
				l.named = true
				if p.layer == 0 && rootKML < 0 {
					l.Name = string(nameBuf)
				} else {
					l.Name = strings.Trim(string(nameBuf), " \n\r\t")
				}
			case p.kind == kContainer && local == "NetworkLink" && p.layer == 0 && rootKML < 0:
				p.features++
				rootOther++
				href, err := doc.scanLink(t)
				if err != nil {
					return nil, err
				}
				if href != "" {
					doc.Links = append(doc.Links, href)
				}
			case p.kind == kContainer && local == "Schema":
				if err := doc.scanSchema(t, tk, &layers[p.layer]); err != nil {
					return nil, err
				}
			default:
				if p.kind == kContainer && isFeature(local) {
					p.features++
					if p.layer == 0 {
						rootOther++
					}
				}
				if p.kind == kKML && isFeature(local) {
					kmlFeatures++
				}
				if err := t.skip(); err != nil {
					return nil, err
				}
			}
		}
	}
	if !sawRoot {
		return nil, &Error{Index: -1, Err: errors.New("not a KML document: no root element")}
	}
	if len(stack) > 0 {
		return nil, t.errAt(io.ErrUnexpectedEOF)
	}
	doc.utf8, doc.Encoding = charset == "", "UTF-8"
	if charset != "" {
		doc.Encoding = charset
	}
	if linked {
		if len(layers) == 0 {
			return nil, &Error{Index: -1, Err: errors.New("no Document, Folder or Placemark")}
		}
		layers = layers[:1]
		layers[0].Name = base
	}
	// GDAL lists the root's placemarks first, then every folder; the root
	// is a layer when it has any feature besides folders (one that has
	// only overlays or links is an empty layer).
	if !linked && len(layers) > 0 && layers[0].Placemarks == 0 && rootOther == 0 {
		layers = layers[1:]
	}
	uniqueNames(layers)
	doc.Layers = layers
	return doc, nil
}

// uniqueNames renames a layer whose name an earlier one has (compared
// case-insensitively) "NAME (#2)", "NAME (#3)", ..., as GDAL does.
func uniqueNames(layers []LayerInfo) {
	seen := make(map[string]bool, len(layers))
	for i := range layers {
		base, name := layers[i].Name, layers[i].Name
		for n := 2; seen[strings.ToLower(name)]; n++ {
			name = fmt.Sprintf("%s (#%d)", base, n)
		}
		seen[strings.ToLower(name)] = true
		layers[i].Name = name
	}
}

// inPlacemark says that err was found in l's last placemark.
func inPlacemark(err error, l *LayerInfo) error {
	var e *Error
	if errors.As(err, &e) {
		e.Layer, e.Index = l.Name, l.Placemarks-1
	}
	return err
}

// scanLink reads a NetworkLink: its Link's (or Url's) href.
func (doc *Doc) scanLink(t *tokens) (string, error) {
	href := ""
	var buf []byte
	for d := 1; d > 0; {
		tok, err := t.next()
		if err != nil {
			return "", eofIsUnexpected(err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			d++
			if tk.Name.Local == "href" && d == 3 {
				if buf, err = t.text(buf, doc.lim.MaxTokenBytes); err != nil {
					return "", err
				}
				d--
				href = strings.TrimSpace(string(buf))
			}
		case xml.EndElement:
			d--
		}
	}
	return href, nil
}

// newLayer is a layer whose container's start tag was just read.
func (doc *Doc) newLayer(name string, t *tokens) LayerInfo {
	return LayerInfo{Name: name, offset: t.d.InputOffset(), line: t.lineNo(),
		Fields: append([]Field(nil), standardFields...), fieldIdx: map[string]int{}}
}

// addField adds a field to l unless it has it.
func (doc *Doc) addField(l *LayerInfo, name string, typ FieldType) error {
	if _, ok := l.fieldIdx[name]; ok {
		return nil
	}
	for _, f := range standardFields {
		if f.Name == name {
			return nil
		}
	}
	if doc.lim.MaxFields > 0 && len(l.fieldIdx) >= doc.lim.MaxFields {
		return &LimitError{Limit: "fields", Max: int64(doc.lim.MaxFields), What: fmt.Sprintf("more than %d ExtendedData fields in one layer", doc.lim.MaxFields)}
	}
	l.fieldIdx[name] = len(l.Fields)
	l.Fields = append(l.Fields, Field{Name: name, Type: typ})
	return nil
}

// scanSchema adds the SimpleFields of a Schema to l, with their types,
// and keeps them by the Schema's id (and name) for the SchemaData that
// refer to it.
func (doc *Doc) scanSchema(t *tokens, se xml.StartElement, l *LayerInfo) error {
	var fields []Field
	for d := 1; d > 0; {
		tok, err := t.next()
		if err != nil {
			return eofIsUnexpected(err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			d++
			if tk.Name.Local == "SimpleField" {
				name, typ := attr(tk, "name"), fieldType(attr(tk, "type"))
				if name == "" {
					continue
				}
				if doc.schemaFields++; doc.lim.MaxFields > 0 && doc.schemaFields > doc.lim.MaxFields {
					return t.errAt(&LimitError{Limit: "fields", Max: int64(doc.lim.MaxFields), What: fmt.Sprintf("more than %d Schema fields", doc.lim.MaxFields)})
				}
				fields = append(fields, Field{Name: name, Type: typ})
				doc.types[name] = typ
				if err := doc.addField(l, name, typ); err != nil {
					return t.errAt(err)
				}
			}
		case xml.EndElement:
			d--
		}
	}
	for _, key := range []string{attr(se, "name"), attr(se, "id")} {
		if key != "" {
			doc.schemas[key] = fields
		}
	}
	return nil
}

// schemaOf returns the fields of the Schema a SchemaData's schemaUrl
// ("#id") refers to, if the document declares it.
func (doc *Doc) schemaOf(url string) ([]Field, bool) {
	if i := strings.LastIndexByte(url, '#'); i >= 0 {
		url = url[i+1:]
	}
	f, ok := doc.schemas[url]
	return f, ok
}

// scanPlacemark consumes a placemark, adding its ExtendedData fields to
// l's, as GDAL does: the fields of the Schemas its SchemaData refer to
// when it has SchemaData, else its Data names.
func (doc *Doc) scanPlacemark(t *tokens, l *LayerInfo) error {
	start := t.d.InputOffset()
	var data []string
	var schemas [][]Field
	hasSchemaData := false
	for d := 1; d > 0; {
		tok, err := t.next()
		if err != nil {
			return eofIsUnexpected(err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			d++
			switch tk.Name.Local {
			case "Data":
				if name := attr(tk, "name"); name != "" && !hasSchemaData {
					if _, ok := l.fieldIdx[name]; !ok && !slices.Contains(data, name) {
						if doc.lim.MaxFields > 0 && len(data) >= doc.lim.MaxFields {
							return t.errAt(&LimitError{Limit: "fields", Max: int64(doc.lim.MaxFields), What: fmt.Sprintf("more than %d ExtendedData fields in one layer", doc.lim.MaxFields)})
						}
						data = append(data, name)
					}
				}
			case "SchemaData":
				hasSchemaData, data = true, nil
				if f, ok := doc.schemaOf(attr(tk, "schemaUrl")); ok {
					schemas = append(schemas, f)
				}
			}
		case xml.EndElement:
			d--
		}
	}
	if max := doc.lim.MaxTokenBytes; max > 0 && t.d.InputOffset()-start > max {
		return t.errAt(&LimitError{Limit: "token-bytes", Max: max, What: fmt.Sprintf("more than %d bytes in one placemark", max)})
	}
	for _, name := range data {
		if err := doc.addField(l, name, String); err != nil {
			return t.errAt(err)
		}
	}
	for _, fs := range schemas {
		for _, f := range fs {
			if err := doc.addField(l, f.Name, f.Type); err != nil {
				return t.errAt(err)
			}
		}
	}
	return nil
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// fieldType maps a Schema SimpleField type to a field type, as GDAL does.
func fieldType(s string) FieldType {
	switch s {
	case "int", "uint", "short", "ushort":
		return Integer
	case "float", "double":
		return Real
	case "bool":
		return Boolean
	}
	return String
}
