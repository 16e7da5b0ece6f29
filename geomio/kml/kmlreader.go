package kml

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/core"
)

// kmlReader is what the layers of a KML document (or of a KMZ's linked
// documents) share: the files, the layers to read and the options. Open
// reads the layers as one stream (core.MultiReader), layer after layer as
// GDAL's LIBKML driver lists them, keeping Index counting across layers.
// It holds one placemark at a time: the document is read once to list
// the layers and their fields, then once from each layer's container.
type kmlReader struct {
	files []*os.File
	plan  []kmlLayer
	props []byte // the current feature's properties, reused
	opts  core.Options
}

// placemarks reads one layer of the plan, its features' Index from idx.
type placemarks struct {
	r    *kmlReader
	pl   *kmlLayer
	lr   *LayerReader
	idx  int64
	feat core.Feature
	err  error
	done bool
}

// kmlLayer is one layer to read: layer i of doc, from file.
type kmlLayer struct {
	doc   *Doc
	i     int
	file  string // name used in errors
	name  string // the layer's name in the upload
	layer core.Layer
}

// Link resolves a KMZ's link (an href relative to the archive's root)
// to the extracted file and its name in errors; ok false when the
// archive has no such file.
type Link func(href string) (path, file string, ok bool)

// Open opens the KML document at path (named file in errors); base
// names a root Document without a name, as GDAL does (the file's name
// without extension). Index starts at first. For a KMZ's main document,
// link resolves its NetworkLinks: when it has relative ones, GDAL reads
// the documents they name as the layers (each one layer, named by the
// file's base name) instead of the main document's; nil for a .kml.
func Open(path, file, base string, opts core.Options, first int64, link Link) (_ core.LayerReader, err error) {
	lim := opts.Limits.WithDefaults()
	r := &kmlReader{opts: opts}
	r.opts.Limits = lim
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	doc, err := r.scan(path, file, base, false)
	if err != nil {
		return nil, err
	}
	var all []kmlLayer
	var relative []string
	for _, h := range doc.Links {
		if !strings.Contains(h, "://") && !strings.HasPrefix(h, "/") && !strings.HasPrefix(h, "#") {
			relative = append(relative, h)
		}
	}
	if link != nil && len(relative) > 0 {
		for _, h := range relative {
			p, f, ok := link(h)
			if !ok {
				continue // GDAL skips a link to what the archive lacks
			}
			d, err := r.scan(p, f, Base(h), true)
			if err != nil {
				return nil, err
			}
			all = append(all, kmlLayer{doc: d, i: 0, file: f})
		}
	} else {
		for i := range doc.Layers {
			all = append(all, kmlLayer{doc: doc, i: i, file: file})
		}
	}
	var names []string
	for j := range all {
		l := &all[j]
		l.name = l.doc.Layers[l.i].Name
		if core.ArchiveOf(opts) != nil {
			l.name = core.ArchiveOf(opts).Prefix + l.name
			core.ArchiveOf(opts).Layers.Pick(l.name)
		}
		names = append(names, l.name)
	}
	if len(names) == 0 {
		return nil, &core.Error{File: file, Problem: "no layer in this KML: no Placemark, Folder or Document"}
	}
	r.plan = all
	if len(opts.Layers) > 0 && core.ArchiveOf(opts) != nil {
		// One source of a zip: the zip refuses a name no source has.
		r.plan = slices.DeleteFunc(slices.Clone(all), func(l kmlLayer) bool { return !slices.Contains(opts.Layers, l.name) })
	} else if len(opts.Layers) > 0 {
		r.plan = nil
		for _, want := range opts.Layers {
			i := slices.Index(names, want)
			if i < 0 {
				return nil, &core.Error{File: file, Problem: fmt.Sprintf("no layer %q (the layers are %s)", want, core.QuoteList(names))}
			}
			r.plan = append(r.plan, all[i])
		}
	}
	for j := range r.plan {
		pl := &r.plan[j]
		l := core.Layer{Name: pl.name, Format: core.FormatKML, Encoding: pl.doc.Encoding}
		// KML coordinates are longitude, latitude on WGS 84 (OGC CRS84),
		// which GDAL reports as EPSG:4326.
		l.SRID, l.CRS = 4326, crs.CRS{Method: crs.Default, EPSG: 4326}
		if opts.SourceSRID != 0 {
			if err := core.SetLayerCRS(&l, pl.file, "", opts); err != nil {
				return nil, err
			}
		}
		pl.layer = l
	}
	sources := make([]core.LayerSource, len(r.plan))
	for j := range r.plan {
		pl := &r.plan[j]
		sources[j] = core.LayerSource{Name: pl.name, Open: func(base int64) (core.LayerReader, error) {
			return &placemarks{r: r, pl: pl, idx: base}, nil
		}}
	}
	return core.NewMultiReader(core.Layers{Sources: sources, First: first, Cleanup: r.Close, None: core.Layer{Format: core.FormatKML}})
}

// scan opens and scans one document (kml.ScanLinked when linked).
func (r *kmlReader) scan(path, file, base string, linked bool) (*Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &core.Error{File: file, Problem: "open", Err: err}
	}
	r.files = append(r.files, f)
	st, err := f.Stat()
	if err != nil {
		return nil, &core.Error{File: file, Problem: "open", Err: err}
	}
	lim := Limits{MaxTokenBytes: r.opts.Limits.MaxRecordBytes, MaxVertices: r.opts.Limits.MaxVertices,
		MaxLayers: r.opts.Limits.MaxLayers, MaxFields: r.opts.Limits.MaxProperties}
	scan := Scan
	if linked {
		scan = ScanLinked
	}
	doc, err := scan(f, st.Size(), base, lim)
	if err != nil {
		return nil, kmlError(file, -1, err)
	}
	return doc, nil
}

// kmlError makes an error of geomio/kml an *Error naming file, its
// limits LimitErrors; index is the feature's Index, -1 for none.
func kmlError(file string, index int64, err error) error {
	var ke *Error
	where := ""
	if errors.As(err, &ke) {
		var parts []string
		if ke.Layer != "" {
			parts = append(parts, fmt.Sprintf("layer %q", ke.Layer))
		}
		switch {
		case ke.Index >= 0 && index >= 0:
			parts = append(parts, fmt.Sprintf("feature %d", index))
		case ke.Index >= 0: // found by the first pass, before Index is known
			parts = append(parts, fmt.Sprintf("placemark %d of the layer", ke.Index))
		}
		if ke.Line > 0 {
			parts = append(parts, fmt.Sprintf("line %d", ke.Line))
		}
		where = strings.Join(parts, ", ")
		err = ke.Err
	}
	var kl *LimitError
	if errors.As(err, &kl) {
		name := map[string]string{"token-bytes": core.LimitFeatureBytes, "vertices": core.LimitVertices, "layers": core.LimitLayers, "fields": core.LimitProperties}[kl.Limit]
		if name != "" {
			if where == "" {
				where = "upload"
			}
			return &core.Error{File: file, Problem: where, Err: &core.LimitError{Limit: name, Max: kl.Max, What: kl.What}}
		}
	}
	problem := "invalid KML"
	if where != "" {
		problem += " at " + where
	}
	return &core.Error{File: file, Problem: problem, Err: err}
}

func (p *placemarks) Next() bool {
	if p.err != nil || p.done {
		return false
	}
	if p.lr == nil {
		lr, err := p.pl.doc.Layer(p.pl.i)
		if err != nil {
			p.err = kmlError(p.pl.file, -1, err)
			return false
		}
		p.lr = lr
	}
	if p.lr.Next() {
		return p.decode()
	}
	if err := p.lr.Err(); err != nil {
		p.err = kmlError(p.pl.file, p.idx, err)
		return false
	}
	p.done = true
	return false
}

// decode makes p.feat of the current placemark.
func (p *placemarks) decode() bool {
	l := &p.pl.layer
	g := p.lr.Geom
	if g != nil {
		if g = core.PromotePolygons(g); g != nil {
			g = core.SetSRID(g, l.SRID)
		}
	}
	props, err := p.properties()
	if err != nil {
		p.err = kmlError(p.pl.file, p.idx, &Error{Layer: l.Name, Index: p.lr.Index(), Line: p.lr.Line, Err: err})
		return false
	}
	p.feat = core.Feature{Index: p.idx, Layer: l.Name, Geom: g, Properties: props, DroppedZM: p.lr.DroppedZ}
	p.idx++
	return true
}

// properties writes the placemark's fields as a JSON object, typed as
// GDAL types them.
func (p *placemarks) properties() ([]byte, error) {
	fields := p.pl.doc.Layers[p.pl.i].Fields
	lim := p.r.opts.Limits.MaxRecordBytes
	out := append(p.r.props[:0], '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = core.AppendJSONString(out, f.Name)
		out = append(out, ':')
		v := p.lr.Values[i]
		if !v.Set {
			out = append(out, "null"...)
			continue
		}
		text := strings.TrimSpace(v.Text)
		switch f.Type {
		case Integer:
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				out = append(out, "null"...)
			} else {
				out = strconv.AppendInt(out, n, 10)
			}
		case Real:
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				out = append(out, "null"...)
			} else {
				out = strconv.AppendFloat(out, x, 'g', -1, 64)
			}
		case Boolean:
			switch strings.ToLower(text) {
			case "1", "true":
				out = append(out, "true"...)
			case "0", "false":
				out = append(out, "false"...)
			default:
				out = append(out, "null"...)
			}
		case DateTime:
			out = core.AppendJSONString(out, text)
		default:
			out = core.AppendJSONString(out, v.Text)
		}
		if int64(len(out)) > lim {
			return nil, &LimitError{Limit: "token-bytes", Max: lim,
				What: fmt.Sprintf("more than %d bytes of properties in one feature", lim)}
		}
	}
	out = append(out, '}')
	p.r.props = out
	return out, nil
}

func (p *placemarks) NextIndex() int64      { return p.idx }
func (p *placemarks) Feature() core.Feature { return p.feat }
func (p *placemarks) Err() error            { return p.err }
func (p *placemarks) Layer() core.Layer     { return p.pl.layer }

// Close closes nothing: the files are the document's (kmlReader.Close).
func (p *placemarks) Close() error { return nil }

// Close closes the documents' files.
func (r *kmlReader) Close() error {
	var err error
	for _, f := range r.files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	r.files = nil
	return err
}

// Base is the name GDAL gives a KML's root layer when the document
// names none: the file's name without its extension.
func Base(name string) string {
	b := filepath.Base(name)
	return strings.TrimSuffix(b, filepath.Ext(b))
}
