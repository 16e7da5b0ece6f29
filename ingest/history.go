package ingest

import (
	"context"
	"time"
)

// History (docs/changes.md, "History"): every version of a source stays
// queryable as of a time, within the ledger's retention. A version's
// retired rows are kept (the PostGIS store's feature_history, migration
// 0033) as long as the ledger keeps its record; a time before a source's
// retained records is an error, never a wrong answer.

// FeatureAsOf is one feature as it was at a time.
type FeatureAsOf struct {
	Bucket    string  `json:"bucket"`
	Key       string  `json:"key"`
	Job       string  `json:"job"` // the version current then
	FeatureID int64   `json:"feature_id"`
	Props     []byte  `json:"-"`
	Geometry  string  `json:"-"` // GeoJSON
	AreaM2    float64 `json:"area_m2"`
}

// SourceAsOf is a source's feature count and area at a time.
type SourceAsOf struct {
	Bucket   string  `json:"bucket"`
	Key      string  `json:"key"`
	Job      string  `json:"job"`
	Features int64   `json:"features"`
	AreaM2   float64 `json:"area_m2"`
}

// HistoryReader reads the features as they were at a time.
type HistoryReader interface {
	// FeaturesAsOf returns target's features at time at, of one source
	// (bucket and key) or of every source (both empty).
	FeaturesAsOf(ctx context.Context, target string, at time.Time, bucket, key string) ([]FeatureAsOf, error)
	// AreaAsOf returns each source's count and area at time at.
	AreaAsOf(ctx context.Context, target string, at time.Time, bucket, key string) ([]SourceAsOf, error)
}
