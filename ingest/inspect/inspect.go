// Package inspect is the preflight of an upload, with no database: it
// fetches the job's input as the service would, reads it with geomio as
// the service would (the job's source SRID and encoding), and describes
// what it found and what geoingest would do with it: each layer's
// geometry types, feature count, fields, CRS (as geoingest resolves it, or
// why it would refuse it), encoding and extent; with Check, the features
// the policies would skip or refuse (null, non-polygonal, invalid); and
// the job's key and route. It streams: one feature at a time, whatever
// the file's size.
package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/lonlat"
	"github.com/geoingest/geoingest/geomio/validity"
	"github.com/geoingest/geoingest/ingest"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// Report is what Run found. Its JSON form is `geoingest inspect --json`.
type Report struct {
	// Source is the upload as a URL (file:///path, s3://bucket/key).
	Source string `json:"source"`
	// Bytes is the size fetched (every part of a multi-file set).
	Bytes int64 `json:"bytes"`
	// SHA256 is the hash of the bytes fetched.
	SHA256 string `json:"sha256"`
	// JobKey is the key the job would have (ingest.NewJob), VersionToken
	// the version it names.
	JobKey       string `json:"job_key"`
	VersionToken string `json:"version_token"`
	// Route is the route the upload takes (ingest.Route's form), "" when
	// none was asked for; Filtered is the trigger gate's reason when it
	// would drop the upload (no job at all).
	Route    string `json:"route,omitempty"`
	Filtered string `json:"filtered,omitempty"`
	// Target is the table the features would go to, Params the job's
	// parameters.
	Target string         `json:"target"`
	Params map[string]any `json:"params"`
	// Layers are the file's layers, in reading order.
	Layers []Layer `json:"layers"`
	// Refusal is why the job would fail (a CRS geoingest refuses, an
	// unreadable file, a feature a "fail" policy stops on), with what
	// would fix it; "" when it would land.
	Refusal string `json:"refusal,omitempty"`
	// Checked says whether the features were checked (Options.Check).
	Checked bool `json:"checked"`
}

// MappedField is a source field of a mapping and the column it fills.
type MappedField struct {
	Field  string `json:"field"`
	Column string `json:"column"`
}

// Layer describes one layer.
type Layer struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	// GeometryType is the layer's geometry type: the one type of its
	// non-null geometries, "MultiPolygon" for polygons and multipolygons
	// mixed (they land as MultiPolygon), "Mixed" otherwise, "None" when
	// every geometry is null.
	GeometryType string `json:"geometry_type"`
	// GeometryTypes counts the features by geometry type ("Polygon",
	// "Point", ..., "None" for null or empty).
	GeometryTypes map[string]int64 `json:"geometry_types"`
	Features      int64            `json:"features"`
	CRS           CRS              `json:"crs"`
	Fields        []Field          `json:"fields"`
	// CandidateKeys are the fields (and "@id", a GeoJSON Feature's id
	// member) present, non-empty and unique in each of the layer's first
	// CandidateKeysOf features, normalised as a key is: what --key or a
	// route's key= can name (keys.go).
	CandidateKeys   []string `json:"candidate_keys"`
	CandidateKeysOf int64    `json:"candidate_keys_of"`
	// MappedFieldsMissing are the fields of the job's mapping that no
	// feature of the layer has (a typo in its from:): their columns would
	// be NULL in every row, and the drift guard holds the next version.
	MappedFieldsMissing []MappedField `json:"mapped_fields_missing,omitempty"`
	// Key is what the job's key (--key, a route's key=) finds in the
	// layer (keys.go); nil without a key, or under a mapping.
	Key *KeyCheck `json:"key,omitempty"`
	// Suggested are the typed columns the layer's values suggest
	// (Options.Suggest, suggest.go).
	Suggested []SuggestedColumn `json:"suggested_columns,omitempty"`
	// Encoding is the text encoding of the attributes ("" when the
	// format has none to choose).
	Encoding string `json:"encoding,omitempty"`
	// Extent is [xmin, ymin, xmax, ymax] in the layer's own CRS (the
	// file's coordinates, before any transformation), which ExtentCRS
	// names; null when it has no geometry.
	Extent []float64 `json:"extent"`
	// ExtentCRS names the CRS of Extent: "EPSG:N" (the code of CRS), the
	// custom CRS's name, or "unknown" when the file names no CRS.
	ExtentCRS string `json:"extent_crs"`
	// GeometryField is the geometry field read when the layer has several
	// (GML); "" otherwise.
	GeometryField string `json:"geometry_field,omitempty"`
	// LinearisedCurves and DroppedZM count the features whose curves
	// would be approximated by line segments, and whose Z or M would be
	// dropped (geomio.Layer), as the job records them.
	LinearisedCurves int64 `json:"linearised_curves"`
	DroppedZM        int64 `json:"dropped_zm"`
	// Check counts, with Options.Check, what the policies would do.
	Check *Check `json:"check,omitempty"`
	// NotRead, when set, is why the job would not read this layer (a
	// layer of points or lines beside polygon layers, a table without
	// geometry); "" for the layers it reads.
	NotRead string `json:"not_read,omitempty"`
	// Action is what the job would do with the layer: "land" (its
	// polygons are written), "skip" (nothing of it is written: not read,
	// or no polygonal feature) or "refuse" (the job fails because of
	// it); Reason says why for skip and refuse. A job refused by one
	// layer lands none of the others (Report.Refusal).
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
}

// CRS is a layer's CRS as geoingest resolves it.
type CRS struct {
	// EPSG is the EPSG code PostGIS would transform with (0 for a custom
	// CRS, which is registered, or an unknown one).
	EPSG int `json:"epsg"`
	// Method is authority, identified, custom, override, default,
	// "none" when the file names no CRS, or "refused" when geoingest
	// cannot use the one it names (see Refusal).
	Method string `json:"method"`
	// Confidence is PROJ's confidence in EPSG, 0-100 (100 when the file
	// names the code itself; 0 when geoingest did not identify it).
	Confidence int `json:"confidence"`
	// Name is the name of the CRS geoingest uses: the EPSG CRS's name in
	// PROJ's database when EPSG is set, else the file's own; "" when
	// the file names none.
	Name string `json:"name"`
	// Transformation is PROJ's operation to WGS 84.
	Transformation string `json:"transformation,omitempty"`
	// Better is a more accurate transformation that needs a grid not
	// installed here, with how to install it.
	Better    *crs.GridOperation `json:"better_transformation,omitempty"`
	BetterFix string             `json:"better_fix,omitempty"`
	// Refusal is why geoingest would refuse the CRS, and how to fix it.
	Refusal string `json:"refusal,omitempty"`
}

// Field is one attribute: its name and the JSON types of its values
// ("string", "number", "boolean", "object", "array"; "null" only when
// every value is null), in order of first appearance.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Check counts the features the job's policies act on.
type Check struct {
	// Null are null or empty geometries (skipped, or the job fails, by
	// the null-geometry policy).
	Null int64 `json:"null"`
	// NonPolygonal are points, lines and collections (the wrong-type
	// policy).
	NonPolygonal int64 `json:"non_polygonal"`
	// Invalid are polygons ST_IsValid would call invalid (GEOS): repaired,
	// or the job fails, by the invalid policy.
	Invalid int64 `json:"invalid"`
	// Cast are the polygonal features whose values the job's mapping
	// would not cast (quarantined, rule cast), and CastFirst says why of
	// the first of them.
	Cast      int64  `json:"cast,omitempty"`
	CastFirst string `json:"cast_first,omitempty"`
}

// Options are Run's options.
type Options struct {
	// Check validates every polygon with GEOS and counts null and
	// non-polygonal features.
	Check bool
	// Limits are geomio's limits, as the service applies them.
	Limits geomio.Limits
	// Route and Filtered are reported as they are (see Report).
	Route, Filtered string
	// Suggest infers each layer's typed columns from its values
	// (Layer.Suggested, suggest.go).
	Suggest bool
}

// Run fetches job's input into a temporary directory under tmp (removed
// before it returns), reads it and reports. A problem with the input is a
// Report with Refusal set, not an error; an error is the fetch's or the
// machine's.
func Run(ctx context.Context, job ingest.Job, tmp string, o Options) (*Report, error) {
	rep := &Report{Source: job.Source.String(), JobKey: job.ID, VersionToken: job.Source.VersionToken,
		Target: job.Params.Target, Params: job.Params.Map(), Route: o.Route, Filtered: o.Filtered, Checked: o.Check,
		Layers: []Layer{}}
	dir, err := os.MkdirTemp(tmp, "geoingest-inspect-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fetched, err := job.Fetch.Fetch(ctx, dir)
	if err != nil {
		return nil, err
	}
	rep.Bytes, rep.SHA256 = fetched.Size, fetched.ContentHash
	// Read as the job would (ingest.Service.Run): the layers and geometry
	// field asked for too.
	gopts := geomio.Options{SourceSRID: job.Params.SourceSRID,
		DefaultEncoding: job.Params.DefaultEncoding, Limits: o.Limits,
		Layers: job.Params.Layers, GeometryField: job.Params.GeometryField, TempDir: dir,
		Context: ctx}
	// Preflight: a layer whose CRS the job would refuse is read all the
	// same (its refusal on its geomio.Layer), and tables without
	// geometry are listed, so that every layer GDAL lists is described.
	gopts.Preflight = true
	// Each CRS resolved once for both passes over the file (a File
	// Geodatabase's layers mostly share one: it was resolved per layer).
	gopts = geomio.WithCRSCache(gopts)
	r, err := geomio.Open(fetched.Path, gopts)
	if err != nil {
		return rep, refuse(rep, err, dir, job)
	}
	defer r.Close()
	proj := &projMemo{}
	s := scanner{p: job.Params, check: o.Check, suggest: o.Suggest, proj: proj}
	if o.Check {
		s.valid = validity.NewChecker()
		defer s.valid.Close()
		if s.mapping = job.Params.TheMapping(); s.mapping != nil {
			s.applier = s.mapping.Applier()
		}
	}
	for r.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.feature(r.Feature(), r.Layer())
	}
	readErr := r.Err()
	// Every layer the job reads, those without a feature too (an empty
	// shapefile, an empty GeoPackage table), as ogrinfo lists them: with
	// their CRS and no extent.
	for _, meta := range geomio.ReadLayers(r) {
		if meta.Name != "" {
			s.layer(meta.Name, meta)
		}
	}
	rep.Layers = s.layers()
	if m := job.Params.TheMapping(); m != nil {
		cols, from := m.Columns(), m.SourceFields()
		for i := range rep.Layers {
			l := &rep.Layers[i]
			if l.Features == 0 {
				continue
			}
			for j, f := range from {
				if !slices.ContainsFunc(l.Fields, func(lf Field) bool { return lf.Name == f }) {
					l.MappedFieldsMissing = append(l.MappedFieldsMissing, MappedField{Field: f, Column: cols[j].Name})
				}
			}
		}
	}
	unread, tables := geomio.UnreadLayers(r), geomio.UnreadTables(r)
	if len(unread)+len(tables) > 0 {
		rep.Layers = append(rep.Layers, otherLayers(ctx, fetched.Path, gopts, unread, tables, job.Params, o.Check, s.valid, proj)...)
	}
	// The job's refusal: the first layer whose CRS it refuses (it
	// refuses them before reading), else the first feature its policies
	// fail on, else the read's error, else the whole file's.
	for _, name := range s.order {
		if a := s.byName[name]; a.crsErr != nil {
			return rep, refuse(rep, a.crsErr, dir, job)
		}
	}
	for _, l := range rep.Layers {
		if l.CRS.Refusal != "" && l.NotRead == "" && l.Action == "refuse" {
			rep.Refusal = fmt.Sprintf("layer %q: %s", l.Name, l.CRS.Refusal)
			return rep, nil
		}
	}
	if s.refusal != "" {
		rep.Refusal = s.refusal
		return rep, nil
	}
	if readErr != nil {
		return rep, refuse(rep, readErr, dir, job)
	}
	if err := geomio.Refusal(r); err != nil {
		return rep, refuse(rep, err, dir, job)
	}
	if len(rep.Layers) == 0 {
		rep.Refusal = "the file has no features"
		return rep, nil
	}
	if rep.Refusal = nothingToWrite(rep); rep.Refusal == "" {
		rep.Refusal = keyInNoFeature(rep)
	}
	return rep, nil
}

// keyInNoFeature is the write gate's refusal of a source's first version
// whose key names a field that no feature of the layers read has
// (ingest.KeyInNoFeature); "" when every key field is in some feature.
func keyInNoFeature(rep *Report) string {
	missing := map[string]int{}
	var fields, layers []string
	for _, l := range rep.Layers {
		if l.NotRead != "" || l.Key == nil {
			continue
		}
		fields = l.Key.Fields
		layers = append(layers, strconv.Quote(l.Name))
		for _, f := range l.Key.FieldsMissing {
			missing[f]++
		}
	}
	for _, f := range fields {
		if missing[f] == len(layers) {
			return fmt.Sprintf("key field %q is in no feature of layer %s: no feature would have a key (a source's first version "+
				"fails so, a later one is held by the drift guard); --key is the field that identifies a feature "+
				"(the candidates are listed as keys), --object-key the object key to match the routes against",
				f, strings.Join(layers, ", "))
		}
	}
	return ""
}

// nothingToWrite is the job's refusal of an upload with no polygonal
// feature in any layer (points, lines, only null geometries, no features:
// committing it would replace the source's parcels with nothing), in the
// words the write gate uses; "" when some feature is polygonal.
func nothingToWrite(rep *Report) string {
	var null, other int64
	for _, l := range rep.Layers {
		if l.NotRead != "" {
			continue
		}
		for t, n := range l.GeometryTypes {
			switch t {
			case "Polygon", "MultiPolygon":
				return ""
			case "None":
				null += n
			default:
				other += n
			}
		}
	}
	return fmt.Sprintf("no polygonal features to write for %s: %d null or empty, %d not polygonal (points or lines)", rep.Target, null, other)
}

// notRead says why the job does not read a layer geomio.UnreadLayers
// names, notTable one geomio.UnreadTables names.
const (
	notRead  = "the job does not read it: a layer of points or lines beside polygon layers (--layer, or the route option layer=, naming it reads it)"
	notTable = "the job does not read it: a table without geometry"
)

// otherLayers describes the layers the job leaves unread (unread) and
// the tables without geometry (tables), read in a pass of their own
// (Options.Layers naming them), with the job's checks counted but its
// policies never refusing: the job does not read them. A layer that
// cannot be read is listed by name with why.
func otherLayers(ctx context.Context, path string, opts geomio.Options, unread, tables []string, p ingest.Params, check bool, valid *validity.Checker, proj *projMemo) []Layer {
	names := append(slices.Clip(unread), tables...)
	opts.Layers = names
	p.NullGeometry, p.WrongType, p.Invalid = ingest.PolicySkip, ingest.PolicySkip, ingest.PolicyRepair
	s := scanner{p: p, check: check, valid: valid, proj: proj}
	r, err := geomio.Open(path, opts)
	if err == nil {
		for r.Next() && ctx.Err() == nil {
			s.feature(r.Feature(), r.Layer())
		}
		err = r.Err()
		for _, meta := range geomio.ReadLayers(r) {
			if meta.Name != "" {
				s.layer(meta.Name, meta)
			}
		}
		r.Close()
	}
	byName := map[string]Layer{}
	for _, l := range s.layers() {
		byName[l.Name] = l
	}
	out := make([]Layer, 0, len(names))
	for _, n := range names {
		why := notRead
		if slices.Contains(tables, n) && !slices.Contains(unread, n) {
			why = notTable
		}
		l, ok := byName[n]
		if !ok {
			l = Layer{Name: n, GeometryTypes: map[string]int64{}, Fields: []Field{}, ExtentCRS: "unknown", GeometryType: "None"}
			if err != nil {
				why += "; it cannot be read: " + err.Error()
			}
		}
		if why == notTable {
			// A table has no CRS to refuse.
			l.CRS = CRS{Method: "none"}
		}
		l.NotRead, l.Action, l.Reason = why, "skip", why
		out = append(out, l)
	}
	return out
}

// refuse records an input error as the report's refusal, naming the
// upload rather than the temporary file, as the job names it; other
// errors are returned.
func refuse(rep *Report, err error, dir string, job ingest.Job) error {
	if !geomio.IsInputError(err) {
		return err
	}
	rep.Refusal = ingest.NameSource(err, dir, job.Source).Error()
	return nil
}

// scanner accumulates the layers of a stream of features.
type scanner struct {
	proj    *projMemo
	p       ingest.Params
	check   bool
	suggest bool
	mapping *ingest.Mapping // with check: the job's, to count its casts
	applier *ingest.Applier
	mapped  []byte
	valid   *validity.Checker
	buf     bytes.Buffer
	order   []string
	byName  map[string]*layerAcc
	refusal string
}

type layerAcc struct {
	l Layer
	// definition is a custom CRS's definition (crs.CRS.Definition).
	definition string
	// crsErr is why the job refuses the layer's CRS (geomio.Layer's
	// CRSError), nil when it does not.
	crsErr error
	// refusal is the first of the layer's features the job's policies
	// fail on.
	refusal   string
	fields    map[string]int // index in l.Fields
	types     map[string]map[string]bool
	keys      keyTracker // keys.go
	match     *keyCheck  // the job's key, keys.go
	hadID     bool       // a feature had a Feature id member
	suggester suggester  // suggest.go, with Options.Suggest
	ext       [4]float64
	hasExt    bool
}

// feature adds one feature; it reports true when the feature is one the
// job's policies would fail on (the first such sets s.refusal).
func (s *scanner) feature(f geomio.Feature, meta geomio.Layer) bool {
	a := s.layer(f.Layer, meta)
	a.l.Features++
	if meta.Name == f.Layer {
		// The reader's counts so far, of the layer this feature is of.
		a.l.GeometryField, a.l.LinearisedCurves, a.l.DroppedZM = meta.GeometryField, meta.Linearised, meta.DroppedZM
	}
	observe := a.keys.begin()
	a.fieldsOf(f.Properties, observe)
	if s.suggest {
		a.suggester.add(f.Properties)
	}
	if observe {
		if len(f.ID) > 0 {
			a.keys.observe("@id", f.ID)
		}
		a.keys.end()
	}
	if len(s.p.Key) > 0 && s.p.TheMapping() == nil {
		if a.match == nil {
			a.match = newKeyCheck(s.p.Key)
		}
		props := f.Properties
		if len(f.ID) > 0 && slices.Contains(s.p.Key, ingest.FeatureIDKey) {
			props, a.hadID = ingest.WithFeatureID(props, f.ID), true
		}
		a.match.add(props)
	}
	g := f.Geom
	typ := "None"
	if g != nil && !g.Empty() {
		typ = typeName(g)
		a.extend(g)
	}
	a.l.GeometryTypes[typ]++
	fail := ""
	if typ != "None" && a.l.CRS.Method == string(crs.Default) && !withinLonLat(g) {
		// The reader's check of a default longitude/latitude CRS (RFC
		// 7946 GeoJSON without a crs member, GeoParquet without a crs),
		// which Preflight leaves to inspect, on every geometry as the
		// reader makes it.
		b := g.Bounds()
		fail = fmt.Sprintf("layer %q feature %d: coordinates (%g %g)..(%g %g) outside longitude/latitude range: the file names no CRS, so EPSG:4326 (RFC 7946) is assumed: give its CRS with --source-srid N (or the route option source-srid=N)",
			f.Layer, f.Index, b.Min(0), b.Min(1), b.Max(0), b.Max(1))
	}
	switch {
	case typ == "None":
		if s.check {
			a.l.Check.Null++
		}
		if s.p.NullGeometry == ingest.PolicyFail {
			fail = fmt.Sprintf("layer %q feature %d: null or empty geometry (null-geometry policy is fail)", f.Layer, f.Index)
		}
	case typ != "Polygon" && typ != "MultiPolygon":
		if s.check {
			a.l.Check.NonPolygonal++
		}
		if s.p.WrongType == ingest.PolicyFail {
			fail = fmt.Sprintf("layer %q feature %d: %s is not polygonal (wrong-type policy is fail)", f.Layer, f.Index, typ)
		}
	default:
		if a.l.CRS.EPSG == 4326 && a.l.CRS.Method != string(crs.Default) && !lonlat.Within(g.FlatCoords(), g.Stride(), lonlat.Slack) {
			b := g.Bounds()
			fail = fmt.Sprintf("layer %q feature %d: coordinates (%g %g)..(%g %g) outside longitude/latitude range, but the CRS is EPSG:4326: the .prj, the crs member or --source-srid is wrong",
				f.Layer, f.Index, b.Min(0), b.Min(1), b.Max(0), b.Max(1))
		}
		if s.check && !s.isValid(g) {
			a.l.Check.Invalid++
			if s.p.Invalid == ingest.PolicyFail && fail == "" {
				fail = fmt.Sprintf("layer %q feature %d: invalid polygon (invalid policy is fail)", f.Layer, f.Index)
			}
		}
		if s.applier != nil {
			// As the job maps a polygonal feature (prepare/features.go).
			props := f.Properties
			if len(props) == 0 {
				props = []byte("{}")
			}
			var err error
			if s.mapped, err = s.applier.Apply(s.mapped[:0], props); err != nil {
				if a.l.Check.Cast == 0 {
					a.l.Check.CastFirst = fmt.Sprintf("layer %q feature %d: %v (mapping %s)", f.Layer, f.Index, err, s.mapping.Name)
				}
				a.l.Check.Cast++
			}
		}
	}
	if fail != "" && a.refusal == "" {
		a.refusal = fail
	}
	if fail != "" && s.refusal == "" {
		s.refusal = fail
		return true
	}
	return false
}

// withinLonLat reports whether every coordinate of g can be a
// longitude/latitude pair (lonlat.Within, with lonlat.Slack), the members
// of a collection each.
func withinLonLat(g geom.T) bool {
	if c, ok := g.(*geom.GeometryCollection); ok {
		for _, m := range c.Geoms() {
			if !withinLonLat(m) {
				return false
			}
		}
		return true
	}
	return lonlat.Within(g.FlatCoords(), g.Stride(), lonlat.Slack)
}

// layer returns the accumulator of the layer name, made from meta on
// first use.
func (s *scanner) layer(name string, meta geomio.Layer) *layerAcc {
	if s.byName == nil {
		s.byName = map[string]*layerAcc{}
	}
	a, ok := s.byName[name]
	if !ok {
		a = &layerAcc{l: Layer{Name: name, Format: meta.Format, Encoding: meta.Encoding,
			GeometryTypes: map[string]int64{}, CRS: s.proj.crsOf(meta), Fields: []Field{}},
			definition: meta.CRS.Definition, crsErr: meta.CRSError, fields: map[string]int{}, types: map[string]map[string]bool{}}
		if s.check {
			a.l.Check = &Check{}
		}
		s.byName[name] = a
		s.order = append(s.order, name)
	}
	return a
}

// isValid is ST_IsValid's verdict, as preparation computes it.
func (s *scanner) isValid(g geom.T) bool {
	if p, ok := g.(*geom.Polygon); ok {
		mp := geom.NewMultiPolygon(geom.XY)
		if mp.Push(p) == nil {
			g = mp
		}
	}
	if validity.Certain(g) {
		return true
	}
	s.buf.Reset()
	if err := wkb.Write(&s.buf, wkb.NDR, g); err != nil {
		return false
	}
	valid, known := s.valid.Valid(s.buf.Bytes())
	return valid || !known
}

func (s *scanner) layers() []Layer {
	out := make([]Layer, 0, len(s.order))
	for _, name := range s.order {
		a := s.byName[name]
		l := a.l
		for i := range l.Fields {
			l.Fields[i].Type = joinTypes(a.types[l.Fields[i].Name])
		}
		l.GeometryType = geometryType(l.GeometryTypes)
		l.ExtentCRS = extentCRS(l.CRS)
		l.CandidateKeys, l.CandidateKeysOf = a.keys.keys(), a.keys.n
		if a.match != nil {
			l.Key = a.match.result(func(f string) bool {
				_, ok := a.fields[f]
				return ok || (f == ingest.FeatureIDKey && a.hadID)
			})
		}
		if s.suggest {
			l.Suggested = a.suggester.columns()
		}
		if a.hasExt {
			l.Extent = a.ext[:]
		}
		l.Action, l.Reason = s.action(a)
		if l.Extent != nil && l.CRS.Refusal == "" && (l.CRS.EPSG > 0 || l.CRS.Method == string(crs.Custom)) {
			// What PROJ (and PostGIS, which picks per coordinate) uses
			// for this layer's coordinates, and what would do better
			// there: Resolve looked at the CRS's whole area.
			c := crs.CRS{Method: crs.Method(l.CRS.Method), EPSG: l.CRS.EPSG, Definition: a.definition}
			if name, better, err := s.proj.transformationIn(c, [4]float64(l.Extent)); err == nil {
				l.CRS.Transformation, l.CRS.Better, l.CRS.BetterFix = name, better, ""
				if better != nil {
					l.CRS.BetterFix = better.Fix()
				}
			}
		}
		out = append(out, l)
	}
	return out
}

// action is what the job would do with a layer it reads, and why
// (Layer.Action).
func (s *scanner) action(a *layerAcc) (string, string) {
	var poly, null, other int64
	for t, n := range a.l.GeometryTypes {
		switch t {
		case "Polygon", "MultiPolygon":
			poly += n
		case "None":
			null += n
		default:
			other += n
		}
	}
	switch {
	case a.crsErr != nil || a.l.CRS.Refusal != "" && poly > 0:
		return "refuse", a.l.CRS.Refusal
	case a.refusal != "":
		return "refuse", a.refusal
	case poly > 0:
		return "land", ""
	case null+other == 0:
		return "skip", "no features"
	}
	return "skip", fmt.Sprintf("no polygonal feature: %d not polygonal (points or lines), %d null or empty, each skipped by its policy", other, null)
}

func (a *layerAcc) extend(g geom.T) {
	b := g.Bounds()
	if b.IsEmpty() {
		return
	}
	x0, y0, x1, y1 := b.Min(0), b.Min(1), b.Max(0), b.Max(1)
	if !a.hasExt {
		a.ext, a.hasExt = [4]float64{x0, y0, x1, y1}, true
		return
	}
	a.ext = [4]float64{math.Min(a.ext[0], x0), math.Min(a.ext[1], y0), math.Max(a.ext[2], x1), math.Max(a.ext[3], y1)}
}

// fieldsOf adds the top-level members of a properties object.
func (a *layerAcc) fieldsOf(props []byte, keys bool) {
	d := json.NewDecoder(bytes.NewReader(props))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return
		}
		if _, ok := a.fields[name]; !ok {
			a.fields[name] = len(a.l.Fields)
			a.l.Fields = append(a.l.Fields, Field{Name: name})
			a.types[name] = map[string]bool{}
		}
		a.types[name][jsonType(raw)] = true
		if keys {
			a.keys.observe(name, raw)
		}
	}
}

func jsonType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func joinTypes(ts map[string]bool) string {
	var out []string
	for t := range ts {
		if t != "null" {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "null"
	}
	sort.Strings(out)
	return strings.Join(out, "|")
}

func typeName(g geom.T) string {
	switch g.(type) {
	case *geom.Point:
		return "Point"
	case *geom.MultiPoint:
		return "MultiPoint"
	case *geom.LineString:
		return "LineString"
	case *geom.MultiLineString:
		return "MultiLineString"
	case *geom.Polygon:
		return "Polygon"
	case *geom.MultiPolygon:
		return "MultiPolygon"
	case *geom.GeometryCollection:
		return "GeometryCollection"
	}
	return fmt.Sprintf("%T", g)
}

func geometryType(counts map[string]int64) string {
	var types []string
	for t := range counts {
		if t != "None" {
			types = append(types, t)
		}
	}
	switch {
	case len(types) == 0:
		return "None"
	case len(types) == 1:
		return types[0]
	case len(types) == 2 && counts["Polygon"] > 0 && counts["MultiPolygon"] > 0:
		return "MultiPolygon"
	}
	return "Mixed"
}

// crsOf describes a layer's resolved CRS; a layer with none is refused
// unless the source SRID is given.
func (m *projMemo) crsOf(l geomio.Layer) CRS {
	c := CRS{EPSG: l.CRS.EPSG, Method: string(l.CRS.Method), Confidence: l.CRS.Confidence, Name: l.CRS.Name,
		Transformation: l.CRS.Transformation, Better: l.CRS.Better}
	if c.Better != nil {
		c.BetterFix = c.Better.Fix()
	}
	if l.CRSError != nil {
		// The job refuses the CRS (a typed geomio error: its problem
		// and cause, without the file, which the report names).
		c.Method, c.Refusal = "refused", l.CRSError.Error()
		if l.CRSText == "" {
			c.Method = "none"
		}
		var ge *geomio.Error
		if errors.As(l.CRSError, &ge) {
			c.Refusal = ge.Problem
			if ge.Err != nil {
				c.Refusal += ": " + ge.Err.Error()
			}
		}
		return c
	}
	if c.Method == "" {
		c.Method = "none"
		c.Refusal = "the file names no CRS (no .prj, crs member or CRS in its metadata), and geoingest never guesses one: " +
			"give it with --source-srid N (or the route option source-srid=N) if you know its EPSG code"
	}
	if c.Method == string(crs.Custom) && c.Name == "" {
		c.Name = l.CRS.Definition
	}
	if c.EPSG > 0 {
		// The CRS geoingest uses is the EPSG one, whatever the file
		// calls it ("unnamed" in a MapInfo file, none in KML).
		if n, err := m.epsgName(c.EPSG); err == nil && n != "" {
			c.Name = n
		}
	}
	return c
}

// extentCRS names the CRS the extent's coordinates are in.
func extentCRS(c CRS) string {
	switch {
	case c.EPSG > 0:
		return fmt.Sprintf("EPSG:%d", c.EPSG)
	case c.Method == string(crs.Custom):
		return c.Name
	}
	return "unknown"
}

// projMemo keeps the answers of PROJ that inspect asks for each layer
// (an EPSG code's name, the transformation for a CRS and an extent), for
// one report: layers that share a CRS (and an extent) ask PROJ once.
type projMemo struct {
	names map[int]string
	trans map[transKey]transAnswer
}

type transKey struct {
	method     crs.Method
	epsg       int
	definition string
	extent     [4]float64
}

type transAnswer struct {
	name   string
	better *crs.GridOperation
	err    error
}

func (m *projMemo) epsgName(code int) (string, error) {
	if n, ok := m.names[code]; ok {
		return n, nil
	}
	n, err := crs.EPSGName(code)
	if err == nil {
		if m.names == nil {
			m.names = map[int]string{}
		}
		m.names[code] = n
	}
	return n, err
}

func (m *projMemo) transformationIn(c crs.CRS, e [4]float64) (string, *crs.GridOperation, error) {
	k := transKey{c.Method, c.EPSG, c.Definition, e}
	if a, ok := m.trans[k]; ok {
		return a.name, a.better, a.err
	}
	name, better, err := crs.TransformationIn(c, e[0], e[1], e[2], e[3])
	if m.trans == nil {
		m.trans = map[transKey]transAnswer{}
	}
	m.trans[k] = transAnswer{name, better, err}
	return name, better, err
}
