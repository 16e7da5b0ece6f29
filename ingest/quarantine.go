package ingest

import (
	"context"
	"encoding/json"
	"time"
)

// The quarantine: a feature that a policy leaves out of its job is kept,
// with the rule it failed and why, instead of only being counted, so that
// the uploader can learn which features were dropped and send a fixed
// file. It is written in the write gate's transaction with the job's
// features: committed once with the job (a duplicate delivery stops at a
// gate and quarantines nothing twice), rolled back with it. The features
// landed plus the features quarantined are the file's features (verify
// reconciles the quarantine with the ledger's counts).
//
// The guard on the share of a version's features left out (Guards.
// Quarantine) reads the quarantine's counts by rule.

// Rules of the quarantine.
const (
	// RuleNullGeometry: a null or empty geometry (null-geometry=skip).
	RuleNullGeometry = "null-geometry"
	// RuleWrongType: a geometry that is not polygonal: a point, a line, a
	// collection (wrong-type=skip).
	RuleWrongType = "wrong-type"
	// RuleCollapsed: an invalid geometry with no polygonal area left after
	// repair (invalid=repair).
	RuleCollapsed = "collapsed"
)

// QuarantinedFeature is one feature of the quarantine.
type QuarantinedFeature struct {
	Index  int64  `json:"index"`
	Layer  string `json:"layer"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Properties are the feature's attributes as read, a JSON object.
	Properties json.RawMessage `json:"properties"`
	// Geometry is the feature's geometry as GeoJSON, in EPSG:4326 where
	// its CRS can be transformed, else in its own (SRID says which), null
	// when it had none.
	Geometry json.RawMessage `json:"geometry"`
	SRID     int             `json:"srid,omitempty"`
}

// QuarantineJob is a job with quarantined features.
type QuarantineJob struct {
	JobID       string           `json:"job_id"`
	Source      string           `json:"source"`
	Target      string           `json:"target"`
	Status      string           `json:"status"`
	Committed   time.Time        `json:"committed_at"`
	Features    int64            `json:"features"`
	Quarantined int64            `json:"quarantined"`
	ByRule      map[string]int64 `json:"by_rule"`
}

// QuarantinePage selects a page of a job's quarantine: the features after
// (AfterLayer, AfterIndex) in file order, at most Limit of them (0:
// MaxPage); Index >= 0 selects that one feature.
type QuarantinePage struct {
	AfterLayer string
	AfterIndex int64
	Limit      int
	Index      int64
}

// FirstQuarantinePage is the page that starts at a job's first feature.
func FirstQuarantinePage(limit int) QuarantinePage {
	return QuarantinePage{AfterIndex: -1 << 63, Limit: limit, Index: -1}
}

// Quarantine is the store's role for reading the quarantine.
type Quarantine interface {
	// QuarantinedJobs lists the jobs with quarantined features, newest
	// first, at most limit of them.
	QuarantinedJobs(ctx context.Context, limit int) ([]QuarantineJob, error)
	// QuarantinedFeatures returns a page of jobID's quarantined features,
	// in file order (an empty page when it has none).
	QuarantinedFeatures(ctx context.Context, jobID string, p QuarantinePage) ([]QuarantinedFeature, error)
}
