package ingest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/geomio"
)

// DefaultSuffixes are the object suffixes that can become a job (compared
// case-insensitively): GeoJSON, zips, shapefiles, GeoParquet, and the formats read
// with GDAL (geomio.OGRSuffixes; a build without GDAL refuses those jobs
// with a message saying so, rather than dropping their events).
var DefaultSuffixes = append([]string{".geojson", ".json", ".geojsonl", ".geojsons", ".ndjson", ".zip", ".shp", ".parquet", ".geoparquet"}, geomio.OGRSuffixes...)

// Reasons the trigger gate drops an event (the label of
// Metrics.EventsFiltered).
const (
	FilterTestEvent = "test_event"
	FilterFolder    = "folder_marker"
	FilterEmpty     = "zero_byte"
	FilterVanished  = "vanished" // the object was gone when its event was decoded
	FilterSidecar   = "sidecar"
	FilterRemoval   = "removal"
	FilterEventType = "event_type"
	FilterNoRoute   = "no_route"
	FilterSuffix    = "unsupported_suffix"
)

// Route sends the objects under a key prefix to a target table.
type Route struct {
	// Prefix is matched against the decoded key ("" matches every key).
	Prefix string
	// Bucket, when set, restricts the route to one bucket.
	Bucket string
	// Target is the feature table ("parcels" or "admin_units").
	Target string
	// MirrorDeletes makes removal events retire the object's current
	// generation; without it they are filtered.
	MirrorDeletes bool
	// Suffixes, when set, restrict the route to keys ending in one of them
	// (case-insensitive); a key under the prefix with another suffix is
	// left to the next matching route.
	Suffixes []string
	// Options override job parameters for the objects on this route.
	Options RouteOptions
}

// RouteOptions are the job parameters a route may set; zero values leave
// the caller's parameters as they are.
type RouteOptions struct {
	SourceSRID   int    // source-srid: the CRS of uploads that name none
	Encoding     string // encoding: DBF text encoding when the file names none
	Invalid      string // invalid: repair or fail
	NullGeometry string // null-geometry: skip or fail
	WrongType    string // wrong-type: skip or fail
	// layer: the layers read from a multi-layer file ("|"-separated)
	Layers []string
	// geometry-field: the geometry field read from layers with several
	GeometryField string
	// key: the source's key field(s) ("APN", "STATE|APN")
	Key []string
	// match-iou: the overlap matching threshold (0: the default)
	MatchIoU float64
	// duplicate-keys: report or fail
	DuplicateKeys string
	// mapping: the typed schema's mapping of the route's sources
	Mapping string
	// guard-shrink, guard-extent, guard-quarantine, guard-drift: the
	// thresholds of the guards of the route's versions (not job
	// parameters: they are not in the job key)
	Guards Guards
	// webhook, expire-zoom, expire-max-tiles: what downstream is told of
	// the route's changes (downstream.go; not in the job key either)
	Downstream Downstream
}

// Check validates the route's parameters over base (Params): what
// ParseRoute cannot check without them, such as a mapping or a key under
// the schema in base. The error names the route.
func (r Route) Check(base Params) error {
	if err := r.Params(base).Validate(); err != nil {
		return fmt.Errorf("route %q: %w", r.String(), err)
	}
	return nil
}

// Params returns base with the route's target and options applied.
func (r Route) Params(base Params) Params {
	p := base
	p.Target = r.Target
	o := r.Options
	if o.SourceSRID != 0 {
		p.SourceSRID = o.SourceSRID
	}
	if o.Encoding != "" {
		p.DefaultEncoding = o.Encoding
	}
	if o.Invalid != "" {
		p.Invalid = o.Invalid
	}
	if o.NullGeometry != "" {
		p.NullGeometry = o.NullGeometry
	}
	if o.WrongType != "" {
		p.WrongType = o.WrongType
	}
	if len(o.Layers) > 0 {
		p.Layers = o.Layers
	}
	if o.GeometryField != "" {
		p.GeometryField = o.GeometryField
	}
	if len(o.Key) > 0 {
		p.Key = o.Key
	}
	if o.MatchIoU != 0 {
		p.MatchIoU = o.MatchIoU
	}
	if o.DuplicateKeys != "" {
		p.DuplicateKeys = o.DuplicateKeys
	}
	if o.Mapping != "" {
		p.Mapping = o.Mapping
	}
	return p
}

// mirrorDeletesSuffix opts a route in to mirroring deletes.
const mirrorDeletesSuffix = "+deletes"

// ParseRoute parses "[BUCKET:]PREFIX=TARGET[+deletes][?OPTION=VALUE&...]":
// "+deletes" mirrors removals, and the options set job parameters for the
// route's objects: source-srid, encoding, invalid, null-geometry,
// wrong-type, layer (a "|"-separated list of layer names), geometry-field,
// key (the source's key field, or "|"-separated fields of a composite
// key), match-iou (the overlap threshold of feature matching),
// duplicate-keys (report or fail), mapping (a mapping of the typed schema,
// --schema), and suffixes (a "|"-separated list such as ".zip|.shp");
// and the guards' thresholds (guards=off; guard-shrink, guard-extent,
// guard-quarantine: a fraction or off; guard-drift: off), see Guards.
// Examples: "parcels/=parcels", "uploads:admin/=admin_units+deletes",
// "legacy/=parcels?source-srid=2154&encoding=cp1252&suffixes=.zip". A
// malformed route, an unknown target or option, or an invalid value is a
// Permanent error naming the route.
func ParseRoute(s string) (Route, error) {
	spec := strings.TrimSpace(s)
	spec, query, _ := strings.Cut(spec, "?")
	prefix, target, ok := strings.Cut(spec, "=")
	if !ok || target == "" {
		return Route{}, Permanentf("route %q: want [BUCKET:]PREFIX=TARGET[+deletes][?OPTION=VALUE&...]", s)
	}
	var r Route
	if t, ok := strings.CutSuffix(target, mirrorDeletesSuffix); ok {
		target, r.MirrorDeletes = t, true
	}
	if b, p, ok := strings.Cut(prefix, ":"); ok {
		r.Bucket, prefix = b, p
	}
	r.Prefix, r.Target = prefix, target
	if !validTarget(target) {
		return Route{}, Permanentf("route %q: unknown target table %q (want one of %v)", s, target, Targets)
	}
	if query != "" {
		if err := r.parseOptions(query); err != nil {
			return Route{}, Permanentf("route %q: %w", s, err)
		}
		// The options must make valid parameters on their own (but the
		// mapping, which serve checks against its --schema).
		p := r.Params(DefaultParams(r.Target))
		p.Mapping = ""
		if err := p.Validate(); err != nil {
			return Route{}, Permanentf("route %q: %w", s, err)
		}
	}
	return r, nil
}

func (r *Route) parseOptions(query string) error {
	seen := map[string]bool{}
	for _, kv := range strings.Split(query, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return fmt.Errorf("option %q: want OPTION=VALUE", kv)
		}
		if seen[k] {
			return fmt.Errorf("option %q given twice", k)
		}
		seen[k] = true
		switch k {
		case "source-srid":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("source-srid %q: want a positive EPSG code", v)
			}
			r.Options.SourceSRID = n
		case "encoding":
			r.Options.Encoding = v
		case "invalid":
			r.Options.Invalid = v
		case "null-geometry":
			r.Options.NullGeometry = v
		case "wrong-type":
			r.Options.WrongType = v
		case "layer":
			r.Options.Layers = strings.Split(v, "|")
		case "geometry-field":
			r.Options.GeometryField = v
		case "key":
			fields, err := ParseKey(v)
			if err != nil {
				return err
			}
			r.Options.Key = fields
		case "match-iou":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) { // NaN too
				return fmt.Errorf("match-iou %q: want a ratio in (0, 1]", v)
			}
			r.Options.MatchIoU = f
		case "duplicate-keys":
			r.Options.DuplicateKeys = v
		case "mapping":
			r.Options.Mapping = v
		case "suffixes":
			for _, suf := range strings.Split(v, "|") {
				if !strings.HasPrefix(suf, ".") || len(suf) < 2 {
					return fmt.Errorf("suffix %q: want an extension such as .zip", suf)
				}
				if !hasSuffixFold(suf, DefaultSuffixes) {
					return fmt.Errorf("suffix %q: not a format geoingest reads (%s)", suf, strings.Join(DefaultSuffixes, " "))
				}
				r.Suffixes = append(r.Suffixes, suf)
			}
		default:
			if ok, err := r.Options.Guards.ParseGuardOption(k, v); ok {
				if err != nil {
					return err
				}
				continue
			}
			if ok, err := r.Options.Downstream.parseOption(k, v); ok {
				if err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("unknown option %q (want source-srid, encoding, invalid, null-geometry, wrong-type, layer, geometry-field, key, match-iou, duplicate-keys, mapping, suffixes, guards, guard-shrink, guard-extent, guard-quarantine, guard-drift, webhook, expire-zoom or expire-max-tiles)", k)
		}
	}
	return nil
}

// hasSuffixFold reports whether key ends in one of suffixes, ignoring case.
func hasSuffixFold(key string, suffixes []string) bool {
	k := strings.ToLower(key)
	for _, s := range suffixes {
		if strings.HasSuffix(k, strings.ToLower(s)) {
			return true
		}
	}
	return false
}

func (r Route) String() string {
	s := r.Prefix + "=" + r.Target
	if r.Bucket != "" {
		s = r.Bucket + ":" + s
	}
	if r.MirrorDeletes {
		s += mirrorDeletesSuffix
	}
	var opts []string
	o := r.Options
	if o.SourceSRID != 0 {
		opts = append(opts, "source-srid="+strconv.Itoa(o.SourceSRID))
	}
	for _, kv := range [][2]string{{"encoding", o.Encoding}, {"invalid", o.Invalid}, {"null-geometry", o.NullGeometry}, {"wrong-type", o.WrongType},
		{"layer", strings.Join(o.Layers, "|")}, {"geometry-field", o.GeometryField},
		{"key", strings.Join(o.Key, "|")}, {"duplicate-keys", o.DuplicateKeys}, {"mapping", o.Mapping}} {
		if kv[1] != "" {
			opts = append(opts, kv[0]+"="+kv[1])
		}
	}
	if o.MatchIoU != 0 {
		opts = append(opts, "match-iou="+strconv.FormatFloat(o.MatchIoU, 'g', -1, 64))
	}
	if len(r.Suffixes) > 0 {
		opts = append(opts, "suffixes="+strings.Join(r.Suffixes, "|"))
	}
	opts = append(opts, o.Guards.guardOptions()...)
	opts = append(opts, o.Downstream.options()...)
	if len(opts) > 0 {
		s += "?" + strings.Join(opts, "&")
	}
	return s
}

// Router is the trigger gate: it decides which events become jobs.
type Router struct {
	routes   []Route // longest prefix first
	suffixes []string
}

// NewRouter returns a trigger gate over routes, matching suffixes
// (DefaultSuffixes when nil). When several routes match a key, the longest
// prefix wins.
func NewRouter(routes []Route, suffixes []string) *Router {
	rs := append([]Route(nil), routes...)
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].Prefix) > len(rs[j].Prefix) })
	if suffixes == nil {
		suffixes = DefaultSuffixes
	}
	return &Router{routes: rs, suffixes: suffixes}
}

// Routes returns the router's routes, longest prefix first.
func (r *Router) Routes() []Route { return append([]Route(nil), r.routes...) }

// Route passes ev through the trigger gate. It returns the route to
// follow, or "" and false with the reason the event is dropped (one of the
// Filter constants). A removal event passes only when its route mirrors
// deletes. A dropped event is never a failure: the caller counts it and
// acks.
func (r *Router) Route(ev Event) (Route, string, bool) {
	switch {
	case ev.Test():
		return Route{}, FilterTestEvent, false
	case !ev.Created() && !ev.Removed():
		return Route{}, FilterEventType, false
	case strings.HasSuffix(ev.Key, "/"):
		return Route{}, FilterFolder, false
	case ev.Created() && ev.Size < 0:
		return Route{}, FilterVanished, false
	case ev.Created() && ev.Size == 0:
		return Route{}, FilterEmpty, false
	}
	if geomio.IsSidecar(ev.Key) {
		return Route{}, FilterSidecar, false
	}
	if !hasSuffixFold(ev.Key, r.suffixes) {
		return Route{}, FilterSuffix, false
	}
	suffixMiss := false
	for _, rt := range r.routes {
		if (rt.Bucket == "" || rt.Bucket == ev.Bucket) && strings.HasPrefix(ev.Key, rt.Prefix) {
			if len(rt.Suffixes) > 0 && !hasSuffixFold(ev.Key, rt.Suffixes) {
				suffixMiss = true
				continue // the next (shorter) matching route may take it
			}
			if ev.Removed() && !rt.MirrorDeletes {
				return Route{}, FilterRemoval, false
			}
			return rt, "", true
		}
	}
	if ev.Removed() {
		return Route{}, FilterRemoval, false
	}
	if suffixMiss {
		return Route{}, FilterSuffix, false
	}
	return Route{}, FilterNoRoute, false
}

// shadows reports whether e, given before r, takes every event r would:
// the same prefix (the router tries routes of equal prefixes in the order
// given), a bucket that covers r's, and every suffix r takes.
func (e Route) shadows(r Route) bool {
	if e.Prefix != r.Prefix || (e.Bucket != "" && e.Bucket != r.Bucket) {
		return false
	}
	if len(e.Suffixes) == 0 {
		return true
	}
	if len(r.Suffixes) == 0 {
		return false
	}
	for _, suf := range r.Suffixes {
		if !hasSuffixFold(suf, e.Suffixes) {
			return false
		}
	}
	return true
}

// ParseRoutes parses a list of routes, each "PREFIX=TARGET"; entries may
// also be comma-separated (as in GEOINGEST_ROUTES).
func ParseRoutes(specs []string) ([]Route, error) {
	var out []Route
	for _, spec := range specs {
		for _, s := range strings.Split(spec, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			r, err := ParseRoute(s)
			if err != nil {
				return nil, err
			}
			for _, e := range out {
				if e.shadows(r) {
					return nil, Permanentf("route %q: never used: route %q takes every key it would (the same prefix, the first given wins); give one route per prefix", s, e.String())
				}
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no routes")
	}
	return out, nil
}
