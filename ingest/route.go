package ingest

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// DefaultSuffixes are the object suffixes that can become a job (compared
// case-insensitively).
var DefaultSuffixes = []string{".geojson", ".json", ".geojsonl", ".geojsons", ".ndjson", ".zip", ".shp"}

// SidecarSuffixes are the parts of a shapefile that never start a job on
// their own: the .shp's event does, and its token covers them.
var SidecarSuffixes = []string{".dbf", ".shx", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml"}

// Reasons the trigger gate drops an event (the label of
// Metrics.EventsFiltered).
const (
	FilterTestEvent = "test_event"
	FilterFolder    = "folder_marker"
	FilterEmpty     = "zero_byte"
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
}

// mirrorDeletesSuffix opts a route in to mirroring deletes.
const mirrorDeletesSuffix = "+deletes"

// ParseRoute parses "PREFIX=TARGET" or "BUCKET:PREFIX=TARGET", with an
// optional "+deletes" after the target to mirror removals (e.g.
// "parcels/=parcels", "uploads:admin/=admin_units+deletes"). Returns a
// Permanent error for a malformed route or an unknown target.
func ParseRoute(s string) (Route, error) {
	prefix, target, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || target == "" {
		return Route{}, Permanentf("route %q: want PREFIX=TARGET", s)
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
	return r, nil
}

func (r Route) String() string {
	s := r.Prefix + "=" + r.Target
	if r.Bucket != "" {
		s = r.Bucket + ":" + s
	}
	if r.MirrorDeletes {
		s += mirrorDeletesSuffix
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
	case ev.Created() && ev.Size == 0:
		return Route{}, FilterEmpty, false
	}
	ext := strings.ToLower(path.Ext(ev.Key))
	for _, s := range SidecarSuffixes {
		if ext == s {
			return Route{}, FilterSidecar, false
		}
	}
	supported := false
	for _, s := range r.suffixes {
		if strings.HasSuffix(strings.ToLower(ev.Key), strings.ToLower(s)) {
			supported = true
			break
		}
	}
	if !supported {
		return Route{}, FilterSuffix, false
	}
	for _, rt := range r.routes {
		if (rt.Bucket == "" || rt.Bucket == ev.Bucket) && strings.HasPrefix(ev.Key, rt.Prefix) {
			if ev.Removed() && !rt.MirrorDeletes {
				return Route{}, FilterRemoval, false
			}
			return rt, "", true
		}
	}
	if ev.Removed() {
		return Route{}, FilterRemoval, false
	}
	return Route{}, FilterNoRoute, false
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
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no routes")
	}
	return out, nil
}
