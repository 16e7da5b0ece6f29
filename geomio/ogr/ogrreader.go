//go:build cgo && !geoingest_nogdal

package ogr

import (
	"github.com/geoingest/geoingest/geomio/internal/hint"

	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/geoingest/geoingest/geomio/fileset"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
	"golang.org/x/text/encoding"
)

// ReaderAvailable reports whether this build reads the formats of
// ogrFormats (with GDAL).
const ReaderAvailable = true

// ogrReader is what the layers of one GDAL dataset share: the dataset,
// the layers to read and the decoding state. OpenReader reads the polygon
// layers as one stream (core.MultiReader), layer after layer in the
// dataset's order, keeping Index counting across layers. It holds one OGR
// feature at a time.
type ogrReader struct {
	path   string // the local file GDAL reads
	file   string // name used in errors
	format string
	opts   core.Options
	ds     *Dataset
	plan   []ogrLayer
	props  []byte
	polys  core.PolyDecoder
	dec    encoding.Encoding // attributes of layers OGR does not give as UTF-8; nil: UTF-8
	encErr bool              // dec was not named by the uploader
	tmp    string            // a folder of the reader's own (a gunzipped GML), removed by Close
	// unread are the layers with geometry the default plan leaves out
	// (points or lines beside polygon layers): UnreadLayers.
	unread []string
	// tables are the layers without geometry, listed with
	// Options.Preflight (UnreadTables).
	tables []string
	// refusal is the error Open would have returned but for
	// Options.Preflight (Refusal).
	refusal error
}

// ogrLayerReader reads one layer of the plan, its features' Index from
// idx.
type ogrLayerReader struct {
	r    *ogrReader
	pl   *ogrLayer
	l    *Layer
	idx  int64
	fid  int64
	feat core.Feature
	err  error
	done bool
}

// ogrLayer is one layer the reader will read, and the geometry field it
// reads.
type ogrLayer struct {
	index int
	field int
	swap  bool
	layer core.Layer
	crs   string // the geometry field's CRS as WKT2, "" for none
	err   error  // why the geometry field asked for cannot be read
}

// OpenReader opens path (named file in errors) with GDAL, as format f, and
// plans the layers to read: every layer with a polygonal (or mixed)
// geometry field, or when there is none, every layer with a geometry field
// (so that the wrong-type policy counts or refuses its features);
// opts.Layers narrows the choice. Non-spatial tables are ignored. A dataset
// with no geometry at all is an *Error.
func OpenReader(path, file string, f Format, opts core.Options, base int64) (_ core.LayerReader, err error) {
	options := f.options
	orig, gunzipped := path, ""
	defer func() {
		if err != nil && gunzipped != "" {
			os.RemoveAll(gunzipped)
		}
	}()
	root := contain(opts, orig).Read[0]
	if f.name == core.FormatGML {
		schema := gmlSchemaOptions(path)
		xsd := ""
		if len(schema) > 0 {
			if p, ok := strings.CutPrefix(schema[0], "XSD="); ok {
				xsd = p // not a GFS_TEMPLATE=, which names no schema to check
			}
		}
		if err := CheckGMLRefs(file, filepath.Dir(orig), root, readGMLHead(orig), xsd); err != nil {
			return nil, err
		}
		if strings.EqualFold(filepath.Ext(path), ".gz") {
			local, dir, err := Gunzip(path, file, opts)
			if err != nil {
				return nil, err
			}
			path, gunzipped = local, dir
		}
		if schema == nil {
			gfs, dir, err := gmlDerivedSchema(path, opts, f)
			if err != nil {
				return nil, fmt.Errorf("%s: schema of its geometry fields: %w", file, err) // the machine's fault (temporary directory)
			}
			if dir != "" {
				defer os.RemoveAll(dir) // GDAL reads the template when it opens the file
				schema = []string{"GFS_TEMPLATE=" + gfs}
			}
		}
		options = append(slices.Clip(options), schema...)
	}
	if f.name == core.FormatMapInfo {
		// As a shapefile without its .dbf: GDAL would open a .tab
		// without its .map as a table without geometry, a .mif without
		// its .mid with no attributes. Loose files and zip entries
		// alike.
		if err := fileset.CheckSetParts(path); err != nil {
			var e *core.Error
			if errors.As(err, &e) {
				e.File = file
			}
			return nil, err
		}
		if err := CheckMapInfoRefs(path, file, root); err != nil {
			return nil, err
		}
	}
	if f.name == core.FormatCSV && opts.GeometryField != "" {
		// The column named is the geometry, whatever its name.
		options = append(withoutOption(options, "GEOM_POSSIBLE_NAMES="), "GEOM_POSSIBLE_NAMES="+opts.GeometryField)
	}
	contain := contain(opts, path)
	contain.Read = append(contain.Read, root)
	for _, o := range options {
		// A schema geoingest chose (beside the file, or derived in a
		// private folder) may be read too.
		for _, k := range []string{"GFS_TEMPLATE=", "XSD="} {
			if p, ok := strings.CutPrefix(o, k); ok {
				contain.Read = append(contain.Read, p)
			}
		}
	}
	ds, err := Open(path, f.drivers, options, contain)
	if err == nil && f.name == core.FormatCSV && opts.GeometryField == "" {
		ds, err = csvOneGeometry(ds, path, f, options, contain)
	}
	if errors.Is(err, ErrNoGDAL) || errors.Is(err, ErrStart) {
		return nil, fmt.Errorf("%s: %w", file, err) // the machine's fault, not the file's
	}
	if cerr := containedError(file, err); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, &core.Error{File: file, Problem: fmt.Sprintf("cannot read as %s", f.title), Err: localPathAs(err, path, file)}
	}
	if f.name == core.FormatGML && strings.HasPrefix(ds.OpenError, "XML parsing of GML file failed") {
		// GDAL's prescan of a GML file without a schema met malformed
		// XML (a truncated file): GDAL then opens it with no features,
		// which would read as an empty file.
		ds.Close()
		return nil, &core.Error{File: file, Problem: fmt.Sprintf("cannot read as %s", f.title), Err: localPathAs(errors.New(ds.OpenError), path, file)}
	}
	r := &ogrReader{path: path, file: file, format: f.name, opts: opts, ds: ds, tmp: gunzipped}
	gunzipped = "" // the reader's Close removes it
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if opts.DefaultEncoding != "" {
		r.dec, _, err = core.EncodingByName(opts.DefaultEncoding)
		if err != nil {
			return nil, &core.Error{File: file, Problem: "default encoding", Err: err}
		}
	}
	var polygonal, other, tables []ogrLayer
	var names []string
	for i := 0; i < ds.LayerCount(); i++ {
		l := ds.Layer(i)
		name := l.Name
		if core.ArchiveOf(opts) != nil {
			name = core.ArchiveOf(opts).Prefix + name
		}
		if len(l.GeomFields) == 0 {
			// A non-spatial table: never read by a job; a preflight
			// lists it and may read it (its features have no geometry).
			if opts.Preflight {
				if core.ArchiveOf(opts) != nil {
					core.ArchiveOf(opts).Layers.Pick(name) // may be named in Layers
				}
				r.tables = append(r.tables, name)
				tables = append(tables, ogrLayer{index: i, layer: core.Layer{Name: name, Format: f.name, Encoding: "UTF-8"}})
			}
			continue
		}
		if core.ArchiveOf(opts) != nil {
			core.ArchiveOf(opts).Layers.Pick(name)
		}
		names = append(names, name)
		field, err := pickGeomField(l, opts.GeometryField)
		gf := l.GeomFields[field]
		pl := ogrLayer{index: i, field: field, swap: gf.SwapXY, layer: core.Layer{Name: name, Format: f.name}, crs: gf.CRS, err: err}
		if len(l.GeomFields) > 1 {
			pl.layer.GeometryField = gf.Name
		}
		pl.layer.Encoding = "UTF-8"
		if !l.UTF8 && opts.DefaultEncoding != "" {
			_, pl.layer.Encoding, _ = core.EncodingByName(opts.DefaultEncoding)
		}
		if gf.Type.Polygonal() || gf.Type.Mixed() {
			polygonal = append(polygonal, pl)
		} else {
			other = append(other, pl)
		}
	}
	if len(names) == 0 && f.name == core.FormatCSV && opts.GeometryField != "" {
		return nil, &core.Error{File: file, Problem: fmt.Sprintf("no column %q to read the geometry from in this CSV", opts.GeometryField)}
	}
	if len(names) == 0 {
		err := &core.Error{File: file, Problem: fmt.Sprintf("no layer with geometry in this %s (%d tables without geometry)", f.title, ds.LayerCount())}
		if !opts.Preflight {
			return nil, err
		}
		// Described all the same: its tables, by UnreadTables.
		r.refusal = err
	}
	plan := polygonal
	if len(plan) == 0 {
		plan = other
	} else if len(opts.Layers) == 0 {
		for _, pl := range other {
			r.unread = append(r.unread, pl.layer.Name)
		}
	}
	switch {
	case len(opts.Layers) > 0 && core.ArchiveOf(opts) != nil:
		// One source of a zip: the layers of it asked for, if any; the
		// zip refuses a name no source has (zipLayers.check).
		plan = nil
		for _, pl := range append(append(polygonal, other...), tables...) {
			if slices.Contains(opts.Layers, pl.layer.Name) {
				plan = append(plan, pl)
			}
		}
	case len(opts.Layers) > 0:
		plan = nil
		for _, want := range opts.Layers {
			found := false
			for _, pl := range append(append(polygonal, other...), tables...) {
				if pl.layer.Name == want {
					plan, found = append(plan, pl), true
					break
				}
			}
			if !found {
				return nil, &core.Error{File: file, Problem: fmt.Sprintf("no layer %q (the layers with geometry are %s)", want, core.QuoteList(names))}
			}
		}
	}
	// Only the layers read are held to the geometry field asked for and
	// have their CRS resolved (and registered): a layer the upload leaves
	// unread (a point layer beside polygons, one --layer leaves out)
	// neither fails the job nor registers its CRS.
	for i := range plan {
		pl := &plan[i]
		if pl.err != nil {
			return nil, &core.Error{File: file, Problem: fmt.Sprintf("layer %q", pl.layer.Name), Err: pl.err}
		}
		if err := core.SetLayerCRS(&pl.layer, file+" layer "+strconv.Quote(pl.layer.Name), pl.crs, opts); err != nil {
			return nil, err
		}
	}
	if err := noCRSBeside(file, plan, opts); err != nil {
		return nil, err
	}
	r.plan = plan
	sources := make([]core.LayerSource, len(r.plan))
	for j := range r.plan {
		pl := &r.plan[j]
		sources[j] = core.LayerSource{Name: pl.layer.Name, Open: func(idx int64) (core.LayerReader, error) {
			return &ogrLayerReader{r: r, pl: pl, idx: idx}, nil
		}}
	}
	return core.NewMultiReader(core.Layers{Sources: sources, First: base, Cleanup: r.Close, None: core.Layer{Format: r.format}, Unread: r.unread,
		Tables: r.tables, Refusal: r.refusal})
}

// noCRSBeside refuses a plan in which some layers name no CRS while
// others name one (a File Geodatabase's synthetic layer beside its
// feature classes): geoingest never guesses a CRS, and a source SRID,
// which applies to every layer, would be wrong for the others. The job
// is refused whole rather than landing the other layers: a version that
// silently lacks a layer would replace the source's current one, which
// has it (docs/inputs.md). The error names the layers without a CRS and
// how to name the layers that land the rest (hint.Layer). With Options.Preflight the
// error is each such layer's Layer.CRSError instead.
func noCRSBeside(file string, plan []ogrLayer, opts core.Options) error {
	if opts.SourceSRID != 0 {
		return nil
	}
	var without, with []string
	for _, pl := range plan {
		switch {
		case pl.layer.CRSError != nil:
		case pl.layer.CRS.Method == "":
			without = append(without, pl.layer.Name)
		default:
			with = append(with, pl.layer.Name)
		}
	}
	if len(without) == 0 || len(with) == 0 {
		return nil // every layer names its CRS, or none does (a source SRID then fits all)
	}
	what := fmt.Sprintf("layer %s names no CRS, though the file's other layers do", core.QuoteList(without))
	if len(without) > 1 {
		what = fmt.Sprintf("layers %s name no CRS, though the file's other layers do", core.QuoteList(without))
	}
	err := &core.Error{File: file, Problem: what, Code: core.CodeLayer, Err: fmt.Errorf(
		"geoingest never guesses a CRS, and a source SRID given %s would apply to every layer; to land the other layers, name them: %s",
		hint.Give(hint.CRS), hint.Give(hint.Layer, with...))}
	if !opts.Preflight {
		return err
	}
	for i := range plan {
		if plan[i].layer.CRSError == nil && plan[i].layer.CRS.Method == "" {
			plan[i].layer.CRSError = err
		}
	}
	return nil
}

// contain is how the GDAL child reading path is bounded: the limits,
// the read's deadline and context, and the job's folder (a zip's
// extraction folder, else the file's own folder) as all it may read.
func contain(opts core.Options, path string) Contain {
	l := opts.Limits.WithDefaults()
	root := filepath.Dir(path)
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if core.ArchiveOf(opts) != nil && core.ArchiveOf(opts).Root != "" {
		root = core.ArchiveOf(opts).Root
	}
	deadline := core.ReadDeadlineOf(opts)
	if deadline.IsZero() {
		deadline = time.Now().Add(l.ReadTimeout)
	}
	return Contain{
		Context: opts.Context, Deadline: deadline, Timeout: l.ReadTimeout,
		CPU: l.ReadCPU, Memory: l.ReadMemory, MaxFeatureBytes: l.MaxRecordBytes,
		Read: []string{root},
	}
}

// containedError is err as the job's error when the reading child was
// stopped: at a limit (an *Error wrapping a *LimitError, a permanent
// failure), or by the read's context (its error, not the input's
// fault). nil for any other err.
func containedError(file string, err error) error {
	if err == nil {
		return nil
	}
	var le *LimitError
	if errors.As(err, &le) {
		return &core.Error{File: file, Problem: "read", Err: &core.LimitError{Limit: le.Limit, Max: le.Max, What: le.What}}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: reading stopped: %w", file, err)
	}
	return nil
}

// csvOneGeometry reopens a CSV in which several columns' names are among
// CSVGeometryColumns with only the best-named one as its geometry: GDAL
// parses every such column as a geometry and fails the row on one that is
// not (a "wkt_source" note beside the "WKT").
func csvOneGeometry(ds *Dataset, path string, f Format, options []string, contain Contain) (*Dataset, error) {
	if ds.LayerCount() != 1 {
		return ds, nil
	}
	gfs := ds.Layer(0).GeomFields
	if len(gfs) < 2 {
		return ds, nil
	}
	best := gfs[0].Name
	for _, g := range gfs[1:] {
		if csvGeometryRank(g.Name) < csvGeometryRank(best) {
			best = g.Name
		}
	}
	ds.Close()
	return Open(path, f.drivers, append(withoutOption(options, "GEOM_POSSIBLE_NAMES="), "GEOM_POSSIBLE_NAMES="+best), contain)
}

// withoutOption is a copy of options without those starting with prefix.
func withoutOption(options []string, prefix string) []string {
	return slices.DeleteFunc(slices.Clone(options), func(o string) bool { return strings.HasPrefix(o, prefix) })
}

// pickGeomField chooses the geometry field of l to read: the one named
// want (case-insensitively), else the first polygonal one, else the first
// mixed one, else the first. A want the layer has no field of is an error
// naming the fields it has, whatever their number (with the first
// field's index, so that the layer can still be classified).
func pickGeomField(l *Layer, want string) (int, error) {
	if want != "" {
		var names []string
		for i, g := range l.GeomFields {
			if strings.EqualFold(g.Name, want) {
				return i, nil
			}
			names = append(names, g.Name)
		}
		if len(names) == 1 && names[0] == "" {
			return 0, fmt.Errorf("no geometry field %q (the layer's one geometry field has no name)", want)
		}
		return 0, fmt.Errorf("no geometry field %q (the layer has %s)", want, core.QuoteList(names))
	}
	for i, g := range l.GeomFields {
		if g.Type.Polygonal() {
			return i, nil
		}
	}
	for i, g := range l.GeomFields {
		if g.Type.Mixed() {
			return i, nil
		}
	}
	return 0, nil
}

// overLimit fails the current feature over a limit (FeatureLimitError).
func (p *ogrLayerReader) overLimit(le *core.LimitError) bool {
	p.err = core.FeatureLimitError(p.r.file, p.pl.layer.Name, p.idx, le)
	return false
}

// errNotUTF8 is a text field that is not UTF-8 when the layer says it is
// (or no encoding to decode it was given): Code CodeEncoding.
var errNotUTF8 = errors.New("invalid UTF-8")

func (p *ogrLayerReader) fail(problem string, err error) bool {
	lay := p.pl.layer.Name
	fid := "" // GDAL could not read the feature at all: it has no FID
	if p.fid >= 0 {
		fid = fmt.Sprintf(" (FID %d)", p.fid)
	}
	e := &core.Error{File: p.r.file, Problem: fmt.Sprintf("layer %q feature %d%s: %s", lay, p.idx, fid, problem), Err: localPathAs(err, p.r.path, p.r.file)}
	if errors.Is(err, errNotUTF8) {
		e.Code = core.CodeEncoding
	}
	p.err = e
	return false
}

// localPathAs rewrites GDAL's message err, which names the local copy
// GDAL read (path, often in a job's temporary directory, or a file beside
// it), to name only the file within the upload: the *Error names the
// upload.
func localPathAs(err error, path, file string) error {
	if err == nil {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), path, filepath.Base(file))
	if dir := filepath.Dir(path); dir != "." && dir != "/" {
		msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
	}
	return errors.New(msg)
}

func (p *ogrLayerReader) Next() bool {
	if p.err != nil || p.done {
		return false
	}
	for {
		if p.l == nil {
			pl := p.pl
			p.l = p.r.ds.Layer(pl.index)
			if err := p.l.Start(pl.field, pl.swap); err != nil {
				p.l = nil
				if cerr := containedError(p.r.file, err); cerr != nil {
					p.err = cerr
					return false
				}
				p.fid = -1
				return p.fail("unreadable", err)
			}
		}
		ok, err := p.l.Next()
		if cerr := containedError(p.r.file, err); cerr != nil {
			p.err = cerr
			return false
		}
		if err != nil {
			p.fid = -1
			if p.r.format == core.FormatCSV {
				// GDAL reads the geometry column as WKT, else as hex
				// WKB: anything else (EWKT's "SRID=N;" prefix, a
				// note) is "Unsupported WKB type" or "Invalid EWKB".
				return p.fail("unreadable (the geometry column must hold WKT or hex WKB; EWKT's SRID=N; prefix is not read, give the CRS "+hint.Give(hint.CRS)+")", err)
			}
			return p.fail("unreadable", err)
		}
		if !ok {
			p.done = true
			return false
		}
		return p.Decode()
	}
}

// Decode makes p.feat of the current OGR feature.
func (p *ogrLayerReader) Decode() bool {
	pl := p.pl
	p.fid = p.l.FID()
	raw, info, err := p.l.WKB()
	var oversize *OversizeError
	if errors.As(err, &oversize) {
		return p.overLimit(core.OverLimit(core.LimitFeatureBytes, p.r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
	}
	if cerr := containedError(p.r.file, err); cerr != nil {
		p.err = cerr
		return false
	}
	if err != nil {
		return p.fail("unreadable geometry", err)
	}
	if int64(len(raw)) > p.r.opts.Limits.MaxRecordBytes {
		return p.overLimit(core.OverLimit(core.LimitFeatureBytes, p.r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
	}
	var g geom.T
	if raw != nil {
		var ok bool
		g, ok, err = p.r.polys.Decode(raw)
		if !ok && err == nil {
			if g, err = wkb.Unmarshal(raw); err == nil {
				g = core.PromotePolygons(g)
			}
		}
		if err != nil {
			return p.fail("undecodable geometry", err)
		}
		if g != nil {
			g = core.SetSRID(g, pl.layer.SRID)
		}
	}
	if info.Curved {
		pl.layer.Linearised++
	}
	props, err := p.Properties(pl)
	if err != nil {
		var le *core.LimitError
		if errors.As(err, &le) {
			return p.overLimit(le)
		}
		return p.fail("attributes", err)
	}
	p.feat = core.Feature{Index: p.idx, Layer: pl.layer.Name, Geom: g, Properties: props, DroppedZM: info.DroppedZM}
	p.idx++
	return true
}

// Properties writes the current feature's attributes as a JSON object.
func (p *ogrLayerReader) Properties(pl *ogrLayer) ([]byte, error) {
	out := append(p.r.props[:0], '{')
	for i, name := range p.l.Fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = core.AppendJSONString(out, name)
		out = append(out, ':')
		v := p.l.Field(i)
		switch v.Kind {
		case Null:
			out = append(out, "null"...)
		case Integer:
			out = strconv.AppendInt(out, v.Int, 10)
		case Boolean:
			out = strconv.AppendBool(out, v.Int != 0)
		case Real:
			if math.IsNaN(v.Real) || math.IsInf(v.Real, 0) {
				out = append(out, "null"...)
			} else {
				out = strconv.AppendFloat(out, v.Real, 'g', -1, 64)
			}
		case String:
			s := v.Str
			if !utf8.Valid(s) {
				if p.l.UTF8 || p.r.dec == nil {
					return nil, fmt.Errorf("field %q: %w; give the file's text encoding %s, for example windows-1252", name, errNotUTF8, hint.Give(hint.Encoding))
				}
				d, err := p.r.dec.NewDecoder().Bytes(s)
				if err != nil {
					return nil, fmt.Errorf("field %q: %w", name, err)
				}
				s = d
			}
			out = core.AppendJSONString(out, s)
		case Date, DateTime, Time:
			out = append(out, '"')
			out = appendDateTime(out, v)
			out = append(out, '"')
		}
		if int64(len(out)) > p.r.opts.Limits.MaxRecordBytes {
			return nil, core.OverLimit(core.LimitFeatureBytes, p.r.opts.Limits.MaxRecordBytes, "more than %d bytes of properties in one feature")
		}
	}
	out = append(out, '}')
	p.r.props = out
	return out, nil
}

// appendDateTime writes an OGR date, time or date-time in ISO 8601.
func appendDateTime(out []byte, v Value) []byte {
	if v.Kind != Time {
		out = fmt.Appendf(out, "%04d-%02d-%02d", v.Year, v.Month, v.Day)
		if v.Kind == Date {
			return out
		}
		out = append(out, 'T')
	}
	sec := int(v.Second)
	out = fmt.Appendf(out, "%02d:%02d:%02d", v.Hour, v.Minute, sec)
	if ms := int(math.Round((v.Second - float64(sec)) * 1000)); ms > 0 && ms < 1000 {
		out = fmt.Appendf(out, ".%03d", ms)
	}
	switch {
	case v.TZ == 100:
		out = append(out, 'Z')
	case v.TZ > 1:
		off := (v.TZ - 100) * 15
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		out = fmt.Appendf(out, "%c%02d:%02d", sign, off/60, off%60)
	}
	return out
}

func (p *ogrLayerReader) NextIndex() int64      { return p.idx }
func (p *ogrLayerReader) Feature() core.Feature { return p.feat }
func (p *ogrLayerReader) Err() error            { return p.err }
func (p *ogrLayerReader) Layer() core.Layer     { return p.pl.layer }

// Close ends the layer's reading; the dataset is the ogrReader's.
func (p *ogrLayerReader) Close() error {
	p.l = nil
	return nil
}

// Close closes the dataset and removes the reader's folder.
func (r *ogrReader) Close() error {
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
		r.tmp = ""
	}
	if r.ds != nil {
		r.ds.Close()
		r.ds = nil
	}
	return nil
}
