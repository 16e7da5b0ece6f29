package ingest

import (
	"fmt"
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
	if err := geomio.CheckEncoding(p.DefaultEncoding); err != nil {
		return Permanentf("default encoding: %w", err)
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
	return m
}

func (p Params) String() string {
	c, err := CanonicalJSON(p.Map())
	if err != nil {
		return fmt.Sprintf("%#v", p)
	}
	return string(c)
}
