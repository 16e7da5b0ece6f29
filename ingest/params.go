package ingest

import (
	"fmt"
	"math"
	"strings"

	"github.com/geoingest/geoingest/geomio"
)

// Pipeline is the name of geoingest's pipeline in job parameters.
const Pipeline = "geoingest"

// DefaultPipelineVersion is the pipeline version of jobs that do not name
// one. Bumping it makes every job key new (the new-key backfill).
const DefaultPipelineVersion = "1"

// Targets are the feature tables a job may write into.
var Targets = []string{"parcels", "admin_units"}

// Geometry policies.
const (
	PolicySkip   = "skip"   // drop the feature and count it
	PolicyFail   = "fail"   // fail the whole job
	PolicyRepair = "repair" // ST_MakeValid, keep the polygonal part
)

// Params are the processing parameters of a job: everything that changes
// its output. They are part of the job key.
type Params struct {
	// Target is the feature table: "parcels" or "admin_units".
	Target string
	// PipelineVersion tags the results; a new version is a new key.
	PipelineVersion string
	// SourceSRID overrides the CRS of the input (0: take it from the file).
	SourceSRID int
	// Invalid is what happens to invalid polygons: "repair" or "fail".
	Invalid string
	// NullGeometry is what happens to null or empty geometries: "skip" or
	// "fail".
	NullGeometry string
	// WrongType is what happens to non-polygonal geometries: "skip" or
	// "fail".
	WrongType string
	// DefaultEncoding is the DBF text encoding when the file names none
	// ("" is UTF-8).
	DefaultEncoding string
	// Layers, when set, are the only layers read from a file with several
	// (GeoPackage, File Geodatabase, KML, GML; the layer names GDAL
	// gives); empty: every polygon layer.
	Layers []string
	// GeometryField, when set, is the geometry field read from layers
	// with several (GML); empty: the first polygonal one.
	GeometryField string
	// Replaces, when set, is the job id that this job's source must still
	// have as its current generation (replace --if-match). It is part of
	// the key so that a repair is a new job.
	Replaces string
	// Key, when set, names the source's key: the field (or, for a
	// composite key, the fields) whose normalised value identifies a
	// feature from one version of the source to the next (see
	// Params.Match). Empty: features are matched by content and overlap
	// only.
	Key []string
	// MatchIoU is the intersection over union of geometries at or above
	// which a feature left unmatched by key and content matches an old
	// one as changed; 0 is DefaultMatchIoU.
	MatchIoU float64
	// DuplicateKeys is what a version whose key is not unique does:
	// "report" (the default: those features are matched by the other
	// rules and counted) or "fail" (the job fails).
	DuplicateKeys string
	// Mapping, when set, names the mapping of Schema that the job's
	// attributes go through (schema.go): its spec is in the key.
	Mapping string
	// Schema is the typed schema the mapping is read from (--schema); it
	// is not in the key, the mapping's spec is.
	Schema *Schema
}

// TheMapping is the job's mapping, nil when it has none (or Schema lacks
// it: Validate says so).
func (p Params) TheMapping() *Mapping {
	if p.Mapping == "" {
		return nil
	}
	return p.Schema.Mapping(p.Mapping)
}

// DefaultMatchIoU is Params.MatchIoU's default.
const DefaultMatchIoU = 0.9

// Duplicate-key policies.
const (
	DuplicateKeysReport = "report"
	DuplicateKeysFail   = "fail"
)

// ParseKey parses a key option: a field name, or field names separated
// by "|" for a composite key ("STATE|APN").
func ParseKey(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	fields := strings.Split(s, "|")
	for _, f := range fields {
		if strings.TrimSpace(f) == "" || f != strings.TrimSpace(f) {
			return nil, Permanentf("key %q: field names must not be empty or padded with spaces", s)
		}
	}
	return fields, nil
}

// Match returns the matching parameters with their defaults applied.
func (p Params) Match() (key []string, minIoU float64, failOnDuplicates bool) {
	minIoU = p.MatchIoU
	if minIoU == 0 {
		minIoU = DefaultMatchIoU
	}
	return p.Key, minIoU, p.DuplicateKeys == DuplicateKeysFail
}

// DefaultParams returns the parameters of a job into target with every
// policy at its default.
func DefaultParams(target string) Params {
	return Params{
		Target:          target,
		PipelineVersion: DefaultPipelineVersion,
		Invalid:         PolicyRepair,
		NullGeometry:    PolicySkip,
		WrongType:       PolicySkip,
	}
}

// Validate checks the parameters. Returns a Permanent error naming the bad
// field.
func (p Params) Validate() error {
	if !validTarget(p.Target) {
		return Permanentf("unknown target table %q (want one of %v)", p.Target, Targets)
	}
	if p.PipelineVersion == "" {
		return Permanentf("pipeline version must not be empty")
	}
	if p.SourceSRID < 0 {
		return Permanentf("source srid %d is negative", p.SourceSRID)
	}
	if p.Invalid != PolicyRepair && p.Invalid != PolicyFail {
		return Permanentf("invalid-geometry policy %q: want repair or fail", p.Invalid)
	}
	for name, v := range map[string]string{"null-geometry": p.NullGeometry, "wrong-type": p.WrongType} {
		if v != PolicySkip && v != PolicyFail {
			return Permanentf("%s policy %q: want skip or fail", name, v)
		}
	}
	for _, l := range p.Layers {
		if strings.TrimSpace(l) == "" {
			return Permanentf("layer names must not be empty")
		}
	}
	seen := map[string]bool{}
	for _, f := range p.Key {
		if strings.TrimSpace(f) == "" {
			return Permanentf("key field names must not be empty")
		}
		if f != strings.TrimSpace(f) {
			return Permanentf("key field %q is padded with spaces", f)
		}
		if seen[f] {
			return Permanentf("key field %q given twice", f)
		}
		seen[f] = true
	}
	if p.MatchIoU < 0 || p.MatchIoU > 1 || math.IsNaN(p.MatchIoU) { // 0: unset (the default)
		return Permanentf("match-iou %v: want a ratio in (0, 1]", p.MatchIoU)
	}
	if p.DuplicateKeys != "" && p.DuplicateKeys != DuplicateKeysReport && p.DuplicateKeys != DuplicateKeysFail {
		return Permanentf("duplicate-keys policy %q: want report or fail", p.DuplicateKeys)
	}
	if err := geomio.CheckEncoding(p.DefaultEncoding); err != nil {
		return Permanentf("default encoding: %w", err)
	}
	if p.Mapping != "" {
		m := p.TheMapping()
		switch {
		case p.Schema == nil:
			return Permanentf("mapping %q: no schema file (--schema FILE or GEOINGEST_SCHEMA)", p.Mapping)
		case m == nil:
			return Permanentf("mapping %q: not a mapping of schema %s", p.Mapping, p.Schema.File)
		case m.Target != p.Target:
			return Permanentf("mapping %q maps to %s, not to the job's target %s", p.Mapping, m.Target, p.Target)
		}
		if err := m.CheckKey(p.Key); err != nil {
			return err
		}
	}
	return nil
}

func validTarget(t string) bool {
	for _, x := range Targets {
		if t == x {
			return true
		}
	}
	return false
}

// Map returns the parameters as the JSON object that goes into the job key
// and the ledger. Optional fields are left out when unset, so that adding
// an option later does not change existing keys.
func (p Params) Map() map[string]any {
	m := map[string]any{
		"pipeline":         Pipeline,
		"version":          p.PipelineVersion,
		"target_table":     p.Target,
		"target_srid":      4326,
		"promote_to_multi": true,
		"invalid":          p.Invalid,
		"null_geometry":    p.NullGeometry,
		"wrong_type":       p.WrongType,
	}
	if p.SourceSRID != 0 {
		m["source_srid"] = p.SourceSRID
	}
	if p.DefaultEncoding != "" {
		m["default_encoding"] = p.DefaultEncoding
	}
	if p.Replaces != "" {
		m["replaces"] = p.Replaces
	}
	if len(p.Layers) > 0 {
		m["layers"] = p.Layers
	}
	if p.GeometryField != "" {
		m["geometry_field"] = p.GeometryField
	}
	// The matching parameters change the feature ids and the changelog a
	// job writes, so they are in the key; unset, they are left out, so
	// that every key of before them is unchanged.
	if len(p.Key) > 0 {
		m["key"] = strings.Join(p.Key, "|")
	}
	if p.MatchIoU != 0 {
		m["match_iou"] = p.MatchIoU
	}
	if p.DuplicateKeys == DuplicateKeysFail {
		m["duplicate_keys"] = p.DuplicateKeys
	}
	// The mapping changes every feature's attributes: its spec is in the
	// key (a changed mapping is a new job), and in the ledger.
	if mp := p.TheMapping(); mp != nil {
		m["mapping"] = mp.Spec()
	} else if p.Mapping != "" {
		m["mapping"] = map[string]any{"name": p.Mapping}
	}
	return m
}

func (p Params) String() string {
	c, err := CanonicalJSON(p.Map())
	if err != nil {
		return fmt.Sprintf("%#v", p)
	}
	return string(c)
}
