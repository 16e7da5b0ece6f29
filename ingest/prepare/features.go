// Package prepare is the stage between reading an upload and writing it:
// it applies a job's feature policies (null geometry, wrong type), makes
// every polygonal geometry a MultiPolygon with a known SRID, refuses
// EPSG:4326 coordinates that cannot be longitudes and latitudes, and, on
// several workers, encodes each feature as EWKB and computes its area
// (geomio/geodesic) and validity (geomio/validity), yielding the prepared
// features in batches in their input order. It knows nothing of the
// database: a driver supplies the SRID check and the encoding of a
// prepared row (RowEncoder).
package prepare

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/lonlat"
	"github.com/geoingest/geoingest/ingest"
	"github.com/twpayne/go-geom"
)

// Feature is one feature ready to be prepared: its geometry a
// MultiPolygon with a known SRID.
type Feature struct {
	Index int64
	Layer string
	Props []byte // JSON object, "{}" when the feature has none
	// Spans, for a record of the job's typed-schema mapping, is where its
	// values are in Props (ingest.Applier.Spans): each column's, then the
	// extras object's; nil for a feature with no mapping.
	Spans []int32
	Geom  *geom.MultiPolygon
	// Raw is the feature's salted raw hash (rawhash.go), 0 when its
	// reader gave none.
	Raw uint64
}

// KnownSRID reports whether the database can store geometries in srid.
// An error is the database's (it is reported Transient).
type KnownSRID func(ctx context.Context, srid int) (bool, error)

// Features reads a geomio.Reader for writing: it skips or refuses (by the
// job's Params) null and empty geometries and non-polygonal ones, promotes
// a Polygon to a MultiPolygon, and requires every geometry's SRID to be
// known (and, for EPSG:4326, its coordinates to be longitudes and
// latitudes). It holds one feature at a time. Run prepares what it yields.
type Features struct {
	ctx   context.Context
	r     geomio.Reader
	p     ingest.Params
	known KnownSRID
	row   Feature
	err   error

	// switched: a Direct run stopped at a feature in another CRS, which
	// is in row and is the first that the next (Staged) run yields.
	switched, pending bool

	// SkippedNull and SkippedType count the features the policies
	// skipped, SkippedCast those whose mapped values do not cast
	// (ingest.RuleCast).
	SkippedNull, SkippedType, SkippedCast int64
	// FirstCast is the first feature whose mapped value did not cast,
	// with why: what a job whose every feature failed so says.
	FirstCast string

	// mapping is the job's typed-schema mapping (nil: none), mapped the
	// record of the current feature (reused).
	mapping *ingest.Mapping
	applier *ingest.Applier // mapping's, for this stream
	mapped  []byte

	// salt is the raw-hash salt of the layer saltLayer (RawSalt).
	salt      uint64
	saltLayer string
	salted    bool

	// Invalid holds the indexes of the features the workers found
	// invalid (ST_IsValid false), in input order. ServerCheck is set when
	// some feature went without an area and validity, for the database to
	// measure and check (see Prepared.Measured).
	Invalid     []int64
	ServerCheck bool

	// bbox is the bounding box of the features a Direct run prepared
	// (EPSG:4326), gathered from the workers (see Extent).
	bbox bbox

	// Observe, when set, is shown every feature a Direct run prepares,
	// on the worker goroutines (see Observer).
	Observe Observer

	// Quarantine, when set, is given each feature the policies skip, in
	// input order, on the goroutine that reads the features, before it is
	// counted; s is valid only during the call. An error stops the
	// features with it (Err).
	Quarantine func(s *Skipped) error
}

// Skipped is a feature a policy left out of its job, for the quarantine
// (ingest.QuarantinedFeature): its rule (ingest.RuleNullGeometry,
// ingest.RuleWrongType), the reason in words, its raw attributes and its
// geometry as read (nil for a null one).
type Skipped struct {
	Index  int64
	Layer  string
	Rule   string
	Reason string
	Props  []byte
	Geom   geom.T
}

// skip hands a skipped feature to the quarantine; false when that failed
// (f.err is set).
func (f *Features) skip(ft *geomio.Feature, rule, reason string) bool {
	if f.Quarantine == nil {
		return true
	}
	props := ft.Properties
	if len(props) == 0 {
		props = []byte("{}")
	}
	s := Skipped{Index: ft.Index, Layer: ft.Layer, Rule: rule, Reason: reason, Props: props, Geom: ft.Geom}
	if ft.Geom != nil && ft.Geom.Empty() {
		s.Geom = nil
	}
	if err := f.Quarantine(&s); err != nil {
		f.err = err
		return false
	}
	return true
}

// Observer is shown the features a Direct run prepares: each worker
// goroutine gets an ObserverWorker of its own, which sees its features
// (in no particular order across workers) and is closed when the run
// ends. The report cells (ingest/reportcells) are computed this way,
// from the geometries the workers already hold.
type Observer interface {
	Worker() ObserverWorker
}

// ObserverWorker sees one worker's prepared features. Observe runs after
// the feature's Prepare, before its encoding; f and p are valid only
// during the call.
type ObserverWorker interface {
	Observe(f *Feature, p *Prepared)
	Close()
}

// New returns the Features of r under the policies of p, with known
// deciding which SRIDs can be written.
func New(ctx context.Context, r geomio.Reader, p ingest.Params, known KnownSRID) *Features {
	f := &Features{ctx: ctx, r: r, p: p, known: known, mapping: p.TheMapping()}
	if f.mapping != nil {
		f.applier = f.mapping.Applier()
	}
	return f
}

// Extent is the bounding box (xmin, ymin, xmax, ymax) of the features
// the Direct runs prepared, as the workers measured it: the extent of the
// job's rows when every feature was in EPSG:4326 (not Switched) and none
// is changed by the server afterwards (repaired); ok is false when there
// were none.
func (f *Features) Extent() (box [4]float64, ok bool) { return f.bbox.b, f.bbox.set }

// Switched reports whether a Direct run stopped at a feature not in
// EPSG:4326: that feature and the rest are for a Staged run.
func (f *Features) Switched() bool { return f.switched }

// Err is the error the features stopped on: the reader's (with its
// classification) or a policy's (Permanent), nil at their end.
func (f *Features) Err() error { return f.err }

// next advances to the next feature to write, in f.row. With direct, a
// geometry in another CRS than EPSG:4326 ends the features with
// f.switched set, and is kept for the next call without direct.
func (f *Features) next(direct bool) bool {
	if f.pending {
		f.pending = false
		return true
	}
	for f.r.Next() {
		ft := f.r.Feature()
		if ft.Geom == nil || ft.Geom.Empty() {
			if f.p.NullGeometry == ingest.PolicyFail {
				f.err = ingest.PermanentCause(ingest.CauseNullGeometry, "feature %d: null or empty geometry (null-geometry policy is fail)", ft.Index)
				return false
			}
			if !f.skip(&ft, ingest.RuleNullGeometry, "null or empty geometry (null-geometry policy: skip)") {
				return false
			}
			f.SkippedNull++
			continue
		}
		var mp *geom.MultiPolygon
		switch t := ft.Geom.(type) {
		case *geom.MultiPolygon:
			mp = t
		case *geom.Polygon:
			mp = geom.NewMultiPolygon(geom.XY).SetSRID(t.SRID())
			if err := mp.Push(t); err != nil {
				f.err = ingest.Permanentf("feature %d: %w", ft.Index, err)
				return false
			}
		default:
			if f.p.WrongType == ingest.PolicyFail {
				f.err = ingest.PermanentCause(ingest.CauseWrongType, "feature %d: %T is not polygonal (wrong-type policy is fail)", ft.Index, ft.Geom)
				return false
			}
			if !f.skip(&ft, ingest.RuleWrongType, geomTypeName(ft.Geom)+" is not polygonal (wrong-type policy: skip)") {
				return false
			}
			f.SkippedType++
			continue
		}
		srid := mp.SRID()
		if srid == 0 {
			f.err = ingest.PermanentCause(ingest.CauseCRS, "layer %q: unknown CRS (no .prj or crs member that names one); give the source SRID (--source-srid) if you know it", ft.Layer)
			return false
		}
		known, err := f.known(f.ctx, srid)
		if err != nil {
			f.err = ingest.Transientf("check srid: %w", err)
			return false
		}
		if !known {
			f.err = ingest.PermanentCause(ingest.CauseCRS, "layer %q: EPSG:%d is not a CRS that PostGIS knows (spatial_ref_sys)", ft.Layer, srid)
			return false
		}
		if srid == 4326 {
			// The layer says (or the caller said) longitude/latitude, but
			// projected coordinates are common under a wrong .prj or crs.
			// Nothing downstream would notice (no transform from 4326),
			// and the areas would be nonsense, so refuse, as geomio does
			// for GeoJSON without a crs member.
			if !lonlat.Within(mp.FlatCoords(), mp.Stride(), lonlat.Slack) {
				b := mp.Bounds()
				f.err = ingest.PermanentCause(ingest.CauseCRS, "layer %q feature %d: coordinates (%g %g)..(%g %g) outside longitude/latitude range, but the CRS is EPSG:4326: the .prj, the crs member or --source-srid is wrong",
					ft.Layer, ft.Index, b.Min(0), b.Min(1), b.Max(0), b.Max(1))
				return false
			}
		}
		props := ft.Properties
		if len(props) == 0 {
			props = []byte("{}")
		}
		if f.mapping != nil {
			// The typed schema's record (ingest/schema.go); a value that
			// does not cast goes to the quarantine, never to NULL.
			var members []int32
			if len(ft.Properties) > 0 {
				members = ft.Members
			}
			out, err := f.applier.ApplyMembers(f.mapped[:0], props, members)
			f.mapped = out
			if err != nil {
				if !f.skip(&ft, ingest.RuleCast, err.Error()+" (mapping "+f.mapping.Name+")") {
					return false
				}
				if f.SkippedCast == 0 {
					f.FirstCast = fmt.Sprintf("layer %q feature %d: %v (mapping %s)", ft.Layer, ft.Index, err, f.mapping.Name)
				}
				f.SkippedCast++
				continue
			}
			props = out
		}
		f.row = Feature{Index: ft.Index, Layer: ft.Layer, Props: props, Geom: mp}
		if f.mapping != nil {
			f.row.Spans = f.applier.Spans()
		}
		if ft.RawHash != 0 {
			f.row.Raw = rawHash(ft.RawHash, f.saltOf(ft.Layer))
		}
		if direct && srid != 4326 {
			f.switched, f.pending = true, true
			return false
		}
		return true
	}
	if err := f.r.Err(); err != nil {
		f.err = err
	}
	return false
}

// geomTypeName names a geometry's type as GeoJSON and WKT do.
func geomTypeName(g geom.T) string {
	switch g.(type) {
	case *geom.Point:
		return "Point"
	case *geom.MultiPoint:
		return "MultiPoint"
	case *geom.LineString:
		return "LineString"
	case *geom.MultiLineString:
		return "MultiLineString"
	case *geom.LinearRing:
		return "LinearRing"
	case *geom.GeometryCollection:
		return "GeometryCollection"
	default:
		return fmt.Sprintf("%T", g)
	}
}

// saltOf is the raw-hash salt of the reader's current layer, named layer
// (computed once a layer).
func (f *Features) saltOf(layer string) uint64 {
	if !f.salted || f.saltLayer != layer {
		f.salt, f.saltLayer, f.salted = RawSalt(f.p, f.r.Layer()), layer, true
	}
	return f.salt
}
