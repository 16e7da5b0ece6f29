package ingest

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Guards decide whether a new version of a source may replace its current
// generation, by comparing the two (CheckGuards). A version that trips a
// guard is kept as a pending generation (Outcome Pending): written, so
// that an approval does not need its file again, but not current and
// invisible to readers, until an operator approves or rejects it.
//
// Guards are not part of the job key: they decide whether a version's
// output becomes current, not what the output is. The zero value is the
// default thresholds.
type Guards struct {
	// Shrink: the fraction by which the feature count or the total area
	// may fall (0: DefaultShrink; negative: the guard is off).
	Shrink float64
	// ExtentJump: how far the version's bounding box may move away from
	// the current one's: the share of the smaller box that the other
	// does not cover (0: DefaultExtentJump; negative: off). Growing or
	// shrinking in place is not a jump.
	ExtentJump float64
	// Quarantine: the largest share of the file's features that may be
	// left out of the version (skipped by a policy: null or non-polygonal
	// geometry, no area left after repair) (0: DefaultQuarantine;
	// negative: off).
	Quarantine float64
	// NoDrift turns the schema drift guard off: a property key of the
	// current generation missing from the version, or one whose values
	// changed JSON type (a code that became a number).
	NoDrift bool
	// Off turns every guard off.
	Off bool
	// KeyFields are the source's key fields (Params.Key), or under a
	// typed-schema mapping every field it maps, which the drift guard
	// requires in the version whatever the current generation recorded.
	KeyFields []string
	// Force applies a version whatever its guards say; Reason, required
	// with it, is recorded with what the guards found, and Actor as who
	// forced it ("": the worker that wrote it).
	Force  bool
	Reason string
	Actor  string
}

// Default thresholds of the guards.
const (
	DefaultShrink     = 0.20
	DefaultExtentJump = 0.50
	DefaultQuarantine = 0.10
)

func (g Guards) shrink() float64     { return orDefault(g.Shrink, DefaultShrink) }
func (g Guards) extentJump() float64 { return orDefault(g.ExtentJump, DefaultExtentJump) }
func (g Guards) quarantine() float64 { return orDefault(g.Quarantine, DefaultQuarantine) }

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// Validate checks the guards' options.
func (g Guards) Validate() error {
	for name, v := range map[string]float64{"guard-shrink": g.Shrink, "guard-extent": g.ExtentJump, "guard-quarantine": g.Quarantine} {
		if v > 1 || math.IsNaN(v) {
			return Permanentf("%s %v: want a fraction in (0, 1], or a negative value to turn the guard off", name, v)
		}
	}
	if g.Force && strings.TrimSpace(g.Reason) == "" {
		return Permanentf("force needs a reason (--reason TEXT): it is recorded in the audit trail")
	}
	return nil
}

// ParseGuardOption sets the guard option k (a route option) to v:
// guard-shrink, guard-extent and guard-quarantine take a fraction (or
// "off"), guard-drift and guards (all of them) take "off" or "on". ok is
// false for another option.
func (g *Guards) ParseGuardOption(k, v string) (ok bool, err error) {
	var dst *float64
	switch k {
	case "guards":
		if v != "off" && v != "on" {
			return true, fmt.Errorf("guards %q: want on or off", v)
		}
		g.Off = v == "off"
		return true, nil
	case "guard-shrink":
		dst = &g.Shrink
	case "guard-extent":
		dst = &g.ExtentJump
	case "guard-quarantine":
		dst = &g.Quarantine
	case "guard-drift":
		if v != "off" && v != "on" {
			return true, fmt.Errorf("guard-drift %q: want on or off", v)
		}
		g.NoDrift = v == "off"
		return true, nil
	default:
		return false, nil
	}
	if v == "off" {
		*dst = -1
		return true, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1 {
		return true, fmt.Errorf("%s %q: want a fraction in (0, 1] or off", k, v)
	}
	*dst = f
	return true, nil
}

// guardOptions returns the route options that set g, for Route.String.
func (g Guards) guardOptions() []string {
	var out []string
	for _, o := range []struct {
		k string
		v float64
	}{{"guard-shrink", g.Shrink}, {"guard-extent", g.ExtentJump}, {"guard-quarantine", g.Quarantine}} {
		switch {
		case o.v < 0:
			out = append(out, o.k+"=off")
		case o.v > 0:
			out = append(out, o.k+"="+strconv.FormatFloat(o.v, 'g', -1, 64))
		}
	}
	if g.NoDrift {
		out = append(out, "guard-drift=off")
	}
	if g.Off {
		out = append(out, "guards=off")
	}
	return out
}

// Kinds of the values of a property key, as bits of VersionStats.Keys.
const (
	KeyString  uint8 = 1
	KeyNumber  uint8 = 2
	KeyBool    uint8 = 4
	KeyComplex uint8 = 8 // an object or an array
)

// VersionStats is what the guards know of one version of a source.
type VersionStats struct {
	Features int64
	AreaM2   float64
	// Left out is the number of the file's features the version does not
	// hold (skipped by a policy), each kept in the quarantine;
	// LeftOutByRule counts them by the rule they failed (RuleNullGeometry,
	// ...), nil when unknown.
	LeftOut       int64
	LeftOutByRule map[string]int64
	// BBox is xmin, ymin, xmax, ymax in EPSG:4326; HasBBox is false when
	// it is unknown.
	BBox    [4]float64
	HasBBox bool
	// Keys maps each property key to the kinds of its non-null values
	// (KeyString, ...); nil when unknown (a generation written before the
	// guards existed): the drift guard then has nothing to compare.
	Keys map[string]uint8
}

// Trip is one guard a version tripped.
type Trip struct {
	Guard  string `json:"guard"` // shrink, extent, drift, quarantine
	Detail string `json:"detail"`
}

// GuardSummary is what the guards recorded of a version: the two
// versions compared and the guards it tripped.
type GuardSummary struct {
	Current   GuardSide `json:"current"`
	Version   GuardSide `json:"version"`
	Trips     []Trip    `json:"trips"`
	CurrentID string    `json:"current_job"`
}

// GuardSide is one version of a GuardSummary.
type GuardSide struct {
	Features int64       `json:"features"`
	AreaM2   float64     `json:"area_m2"`
	LeftOut  int64       `json:"left_out,omitempty"`
	BBox     *[4]float64 `json:"bbox,omitempty"`
}

func side(s VersionStats) GuardSide {
	out := GuardSide{Features: s.Features, AreaM2: s.AreaM2, LeftOut: s.LeftOut}
	if s.HasBBox {
		b := s.BBox
		out.BBox = &b
	}
	return out
}

// Reason is the trips as one line, for the audit trail and the operator.
func (s GuardSummary) Reason() string {
	parts := make([]string, len(s.Trips))
	for i, t := range s.Trips {
		parts[i] = t.Guard + ": " + t.Detail
	}
	return strings.Join(parts, "; ")
}

// CheckGuards compares version, a new version of a source, with cur, its
// current generation, and returns what the guards found; no trips means
// the version may replace cur. A source with no current generation has
// nothing to compare with, and every first version passes.
func CheckGuards(g Guards, cur, version VersionStats) GuardSummary {
	sum := GuardSummary{Current: side(cur), Version: side(version)}
	if g.Off {
		return sum
	}
	trip := func(guard, format string, args ...any) {
		sum.Trips = append(sum.Trips, Trip{Guard: guard, Detail: fmt.Sprintf(format, args...)})
	}
	if t := g.shrink(); t > 0 {
		if cur.Features > 0 && float64(version.Features) < float64(cur.Features)*(1-t) {
			trip("shrink", "features down %.1f%% (%d -> %d; threshold %g%%)",
				100*(1-float64(version.Features)/float64(cur.Features)), cur.Features, version.Features, 100*t)
		}
		if cur.AreaM2 > 0 && version.AreaM2 < cur.AreaM2*(1-t) {
			trip("shrink", "total area down %.1f%% (%.0f m2 -> %.0f m2; threshold %g%%)",
				100*(1-version.AreaM2/cur.AreaM2), cur.AreaM2, version.AreaM2, 100*t)
		}
	}
	if t := g.extentJump(); t > 0 && cur.HasBBox && version.HasBBox {
		if moved := 1 - boxOverlap(cur.BBox, version.BBox); moved > t {
			trip("extent", "bounding box moved: %.0f%% of the smaller box is outside the other (current %s, version %s; threshold %g%%)",
				100*moved, fmtBox(cur.BBox), fmtBox(version.BBox), 100*t)
		}
	}
	named := map[string]bool{} // fields the drift guard names as missing
	keyField := map[string]bool{}
	for _, k := range g.KeyFields {
		keyField[k] = true
	}
	if !g.NoDrift && cur.Keys != nil && version.Keys != nil {
		var missing, retyped []string
		for k, kinds := range cur.Keys {
			nk, ok := version.Keys[k]
			switch {
			case !ok:
				named[k] = true
				if keyField[k] {
					k += " (a key or mapped field)"
				}
				missing = append(missing, k)
			case kinds != 0 && nk&^kinds != 0:
				retyped = append(retyped, fmt.Sprintf("%s (%s -> %s)", k, kindNames(kinds), kindNames(nk)))
			}
		}
		sort.Strings(missing)
		sort.Strings(retyped)
		if len(missing) > 0 {
			trip("drift", "fields missing: %s", strings.Join(missing, ", "))
		}
		if len(retyped) > 0 {
			trip("drift", "fields whose values changed type: %s", strings.Join(retyped, ", "))
		}
	}
	if !g.NoDrift && version.Keys != nil {
		var missing []string
		for _, k := range g.KeyFields {
			if _, ok := version.Keys[k]; !ok && !named[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			trip("drift", "key or mapped fields missing: %s", strings.Join(missing, ", "))
		}
	}
	if t := g.quarantine(); t > 0 {
		if all := version.Features + version.LeftOut; all > 0 && float64(version.LeftOut) > float64(all)*t {
			trip("quarantine", "%d of %d features (%.1f%%) left out%s (threshold %g%%; geoingest quarantine list JOB)",
				version.LeftOut, all, 100*float64(version.LeftOut)/float64(all), byRule(version.LeftOutByRule), 100*t)
		}
	}
	return sum
}

// byRule is " (rule n, rule n)" in the order of the rules' names, or
// nothing.
func byRule(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	rules := make([]string, 0, len(m))
	for r := range m {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for i, r := range rules {
		rules[i] = fmt.Sprintf("%s %d", r, m[r])
	}
	return " (" + strings.Join(rules, ", ") + ")"
}

// boxOverlap is the share of the smaller of a and b that the other
// covers: 1 when one box holds the other (a version that grew or shrank
// in place: the shrink guard judges that), 0 when they are apart. A
// degenerate box (a point, a line) is 1 inside the other, else 0.
func boxOverlap(a, b [4]float64) float64 {
	ix := math.Min(a[2], b[2]) - math.Max(a[0], b[0])
	iy := math.Min(a[3], b[3]) - math.Max(a[1], b[1])
	if ix < 0 || iy < 0 {
		return 0
	}
	smaller := math.Min((a[2]-a[0])*(a[3]-a[1]), (b[2]-b[0])*(b[3]-b[1]))
	if smaller <= 0 {
		return 1 // a degenerate box that touches the other
	}
	return math.Min(1, ix*iy/smaller)
}

func fmtBox(b [4]float64) string {
	return fmt.Sprintf("[%.5f %.5f %.5f %.5f]", b[0], b[1], b[2], b[3])
}

func kindNames(k uint8) string {
	var n []string
	for _, x := range []struct {
		bit  uint8
		name string
	}{{KeyString, "string"}, {KeyNumber, "number"}, {KeyBool, "boolean"}, {KeyComplex, "object"}} {
		if k&x.bit != 0 {
			n = append(n, x.name)
		}
	}
	if len(n) == 0 {
		return "null"
	}
	return strings.Join(n, "|")
}

// Over returns g with the thresholds base sets where g sets none: g is
// the caller's (a command's flags: --force, --reason, thresholds), base
// the route's.
func (g Guards) Over(base Guards) Guards {
	if g.Shrink == 0 {
		g.Shrink = base.Shrink
	}
	if g.ExtentJump == 0 {
		g.ExtentJump = base.ExtentJump
	}
	if g.Quarantine == 0 {
		g.Quarantine = base.Quarantine
	}
	g.NoDrift = g.NoDrift || base.NoDrift
	g.Off = g.Off || base.Off
	return g
}

// KeyInNoFeature refuses a source's first version (of at least one
// feature) when a field of its key (Params.Key; under a mapping, the
// source field of each key column) is in no feature of it: no feature
// then has a key, and a typo (APNX for APN, @id in a format without ids)
// would land silently, matching nothing by key at the next version
// (docs/changes.md). keys are the version's property keys
// (VersionStats.Keys), layers the names of the layers read. The error
// names the field, the layers and the fields they have.
func KeyInNoFeature(p Params, keys map[string]uint8, layers []string) error {
	fields := p.Key
	if m := p.TheMapping(); m != nil {
		fields = nil
		for _, k := range p.Key {
			for i, c := range m.Columns() {
				if c.Name == k {
					fields = append(fields, m.SourceFields()[i])
				}
			}
		}
	}
	for _, f := range fields {
		if _, ok := keys[f]; ok {
			continue
		}
		have := make([]string, 0, len(keys))
		for k := range keys {
			have = append(have, k)
		}
		sort.Strings(have)
		list := strings.Join(have, ", ")
		if list == "" {
			list = "none"
		}
		quoted := make([]string, len(layers))
		for i, l := range layers {
			quoted[i] = strconv.Quote(l)
		}
		where := "layer " + strings.Join(quoted, ", ")
		if len(layers) > 1 {
			where = "layers " + strings.Join(quoted, ", ")
		}
		return Permanentf("key field %q is in no feature of %s (its fields: %s): no feature would have a key; "+
			"give the field that identifies a feature with --key or the route's key= (geoingest inspect FILE lists candidate keys)",
			f, where, list)
	}
	return nil
}
