package geomio

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/kml"
)

// kmlReader reads the layers of a KML document (geomio/kml) as one
// stream, layer after layer as GDAL's LIBKML driver lists them, keeping
// Index counting across layers. It holds one placemark at a time: the
// document is read once to list the layers and their fields, then once
// from each layer's container.
type kmlReader struct {
	f      *os.File
	file   string // name used in errors
	doc    *kml.Doc
	plan   []int // indexes of doc.Layers to read
	layers []Layer
	cur    int
	lr     *kml.LayerReader
	idx    int64
	feat   Feature
	props  []byte
	opts   Options
	err    error
	done   bool
}

// openKML opens the KML document at path (named file in errors); base
// names a root Document without a name, as GDAL does (the file's name
// without extension). Index starts at first.
func openKML(path, file, base string, opts Options, first int64) (_ layerReader, err error) {
	lim := opts.Limits.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: file, Problem: "open", Err: err}
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, &Error{File: file, Problem: "open", Err: err}
	}
	doc, err := kml.Scan(f, st.Size(), base, kml.Limits{
		MaxTokenBytes: lim.MaxRecordBytes, MaxVertices: lim.MaxVertices, MaxLayers: lim.MaxLayers, MaxFields: lim.MaxProperties,
	})
	if err != nil {
		return nil, kmlError(file, -1, err)
	}
	r := &kmlReader{f: f, file: file, doc: doc, opts: opts, idx: first, cur: -1}
	r.opts.Limits = lim
	var names []string
	for i, l := range doc.Layers {
		names = append(names, l.Name)
		if len(opts.Layers) == 0 {
			r.plan = append(r.plan, i)
		}
	}
	if len(names) == 0 {
		return nil, &Error{File: file, Problem: "no layer in this KML: no Placemark, Folder or Document"}
	}
	for _, want := range opts.Layers {
		i := -1
		for j, n := range names {
			if n == want {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, &Error{File: file, Problem: fmt.Sprintf("no layer %q (the layers are %s)", want, quoteList(names))}
		}
		r.plan = append(r.plan, i)
	}
	for _, i := range r.plan {
		l := Layer{Name: doc.Layers[i].Name, Format: FormatKML, Encoding: doc.Encoding}
		// KML coordinates are longitude, latitude on WGS 84 (OGC CRS84),
		// which GDAL reports as EPSG:4326.
		l.SRID, l.CRS = 4326, crs.CRS{Method: crs.Default, EPSG: 4326}
		if opts.SourceSRID != 0 {
			if err := setLayerCRS(&l, file, "", opts); err != nil {
				return nil, err
			}
		}
		r.layers = append(r.layers, l)
	}
	return r, nil
}

// kmlError makes an error of geomio/kml an *Error naming file, its
// limits LimitErrors; index is the feature's Index, -1 for none.
func kmlError(file string, index int64, err error) error {
	var ke *kml.Error
	where := ""
	if errors.As(err, &ke) {
		var parts []string
		if ke.Layer != "" {
			parts = append(parts, fmt.Sprintf("layer %q", ke.Layer))
		}
		if ke.Index >= 0 && index >= 0 {
			parts = append(parts, fmt.Sprintf("feature %d", index))
		}
		if ke.Line > 0 {
			parts = append(parts, fmt.Sprintf("line %d", ke.Line))
		}
		where = strings.Join(parts, ", ")
		err = ke.Err
	}
	var kl *kml.LimitError
	if errors.As(err, &kl) {
		name := map[string]string{"token-bytes": LimitFeatureBytes, "vertices": LimitVertices, "layers": LimitLayers, "fields": LimitProperties}[kl.Limit]
		if name != "" {
			if where == "" {
				where = "upload"
			}
			return &Error{File: file, Problem: where, Err: &LimitError{Limit: name, Max: kl.Max, What: kl.What}}
		}
	}
	problem := "invalid KML"
	if where != "" {
		problem += " at " + where
	}
	return &Error{File: file, Problem: problem, Err: err}
}

func (r *kmlReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	for {
		if r.lr == nil {
			r.cur++
			if r.cur >= len(r.plan) {
				r.done = true
				return false
			}
			lr, err := r.doc.Layer(r.plan[r.cur])
			if err != nil {
				r.err = kmlError(r.file, -1, err)
				return false
			}
			r.lr = lr
		}
		if r.lr.Next() {
			return r.decode()
		}
		if err := r.lr.Err(); err != nil {
			r.err = kmlError(r.file, r.idx, err)
			return false
		}
		r.lr = nil
	}
}

// decode makes r.feat of the current placemark.
func (r *kmlReader) decode() bool {
	l := &r.layers[r.cur]
	g := r.lr.Geom
	if g != nil {
		if g = promotePolygons(g); g != nil {
			g = setSRID(g, l.SRID)
		}
	}
	props, err := r.properties()
	if err != nil {
		r.err = kmlError(r.file, r.idx, &kml.Error{Layer: l.Name, Index: r.lr.Index(), Line: r.lr.Line, Err: err})
		return false
	}
	r.feat = Feature{Index: r.idx, Layer: l.Name, Geom: g, Properties: props, DroppedZM: r.lr.DroppedZ}
	r.idx++
	return true
}

// properties writes the placemark's fields as a JSON object, typed as
// GDAL types them.
func (r *kmlReader) properties() ([]byte, error) {
	fields := r.doc.Layers[r.plan[r.cur]].Fields
	out := append(r.props[:0], '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, f.Name)
		out = append(out, ':')
		v := r.lr.Values[i]
		if !v.Set {
			out = append(out, "null"...)
			continue
		}
		text := strings.TrimSpace(v.Text)
		switch f.Type {
		case kml.Integer:
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				out = append(out, "null"...)
			} else {
				out = strconv.AppendInt(out, n, 10)
			}
		case kml.Real:
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				out = append(out, "null"...)
			} else {
				out = strconv.AppendFloat(out, x, 'g', -1, 64)
			}
		case kml.Boolean:
			switch strings.ToLower(text) {
			case "1", "true":
				out = append(out, "true"...)
			case "0", "false":
				out = append(out, "false"...)
			default:
				out = append(out, "null"...)
			}
		case kml.DateTime:
			out = appendJSONString(out, text)
		default:
			out = appendJSONString(out, v.Text)
		}
		if int64(len(out)) > r.opts.Limits.MaxRecordBytes {
			return nil, &kml.LimitError{Limit: "token-bytes", Max: r.opts.Limits.MaxRecordBytes,
				What: fmt.Sprintf("more than %d bytes of properties in one feature", r.opts.Limits.MaxRecordBytes)}
		}
	}
	out = append(out, '}')
	r.props = out
	return out, nil
}

func (r *kmlReader) nextIndex() int64 { return r.idx }
func (r *kmlReader) Feature() Feature { return r.feat }
func (r *kmlReader) Err() error       { return r.err }

func (r *kmlReader) Layer() Layer {
	i := max(r.cur, 0)
	if i >= len(r.layers) {
		i = len(r.layers) - 1
	}
	if i < 0 {
		return Layer{Format: FormatKML}
	}
	return r.layers[i]
}

func (r *kmlReader) Close() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

// kmlBase is the name GDAL gives a KML's root layer when the document
// names none: the file's name without its extension.
func kmlBase(name string) string {
	b := filepath.Base(name)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
