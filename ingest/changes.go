package ingest

import (
	"context"
	"errors"
	"time"
)

// Changes is what one job changed in its source's current generation:
// its change record (docs/design.md, "Versions as changes"). It is
// written by the job's write-gate transaction, so exactly once with the
// job. A feature whose geometry and attributes both changed counts in
// Geometry and in Attributes.
type Changes struct {
	Job    string `json:"job"`
	Target string `json:"target_table"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// Base is the job whose generation this one replaced or retired; ""
	// for a source's first version.
	Base   string       `json:"base_job,omitempty"`
	Counts ChangeCounts `json:"counts"`
	// Matched says how the features that kept their identity were
	// matched to their predecessors.
	Matched       MatchCounts `json:"matched"`
	DuplicateKeys int64       `json:"duplicate_keys"`
	Lineage       int64       `json:"lineage"`
	// BBox is the extent of every change, old and new geometries, as a
	// GeoJSON geometry ("" when nothing changed; in JSON the object).
	BBox       GeoJSON   `json:"bbox,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
	// Cursor is the change feed's position just after this record.
	Cursor string `json:"cursor"`
}

// ChangeCounts are a job's features per kind of change.
type ChangeCounts struct {
	Added      int64 `json:"added"`
	Removed    int64 `json:"removed"`
	Geometry   int64 `json:"geometry"`
	Attributes int64 `json:"attributes"`
	Unchanged  int64 `json:"unchanged"`
}

// MatchCounts are a job's features matched to a predecessor, by rule.
type MatchCounts struct {
	Key     int64 `json:"key"`
	Content int64 `json:"content"`
	Overlap int64 `json:"overlap"`
}

// FeatureChange is one feature's change in a job.
type FeatureChange struct {
	Job       string `json:"job"`
	FeatureID int64  `json:"feature_id"`
	// Kind is "added", "removed", "geometry", "attributes" or
	// "geometry+attributes".
	Kind string `json:"kind"`
	// MatchedBy is "key", "content" or "overlap" for a changed feature.
	MatchedBy string `json:"matched_by,omitempty"`
	// OldBBox and NewBBox are the envelopes of the old and new
	// geometries, as GeoJSON geometries ("" where there is none; in JSON
	// the objects).
	OldBBox     GeoJSON `json:"old_bbox,omitempty"`
	NewBBox     GeoJSON `json:"new_bbox,omitempty"`
	AreaDeltaM2 float64 `json:"area_delta_m2"`
	// Successors, for a removed feature, and Predecessors, for an added
	// one, are the features of the other side it shares area with (its
	// lineage: the pieces of a split, the parts of a merge), by feature
	// id in order.
	Successors   []int64 `json:"successors,omitempty"`
	Predecessors []int64 `json:"predecessors,omitempty"`
}

// SourceLookup tells whether a source was ever seen: a command asked
// about a source that no job ever named says so, rather than print an
// empty answer (a mistyped path looks like a source with no changes).
type SourceLookup interface {
	// SourceKnown reports whether any job was ever recorded for the
	// source bucket/key.
	SourceKnown(ctx context.Context, bucket, key string) (bool, error)
}

// ChangeLog reads the change records (the PostGIS store's, migration
// 0025).
type ChangeLog interface {
	// JobChanges returns a job's change record, and with features its
	// changed features in feature id order, each with its lineage. A job with no record (a
	// duplicate, a superseded version, a job of before the changelog)
	// is an error wrapping ErrNoChanges.
	JobChanges(ctx context.Context, job string, features bool) (Changes, []FeatureChange, error)
	// SourceChanges returns the records of a source's jobs recorded at or
	// after since, oldest first.
	SourceChanges(ctx context.Context, bucket, key string, since time.Time) ([]Changes, error)
	// ChangeFeed returns at most limit records committed after the
	// cursor after ("": from the start), in an order in which no record
	// ever appears behind a cursor already returned: a consumer that
	// stores the last Cursor it processed resumes there, at least once.
	ChangeFeed(ctx context.Context, after string, limit int) ([]Changes, error)
	// ChangeFeedBehind says whether records committed after the cursor
	// after exist that ChangeFeed does not return yet, because a
	// transaction older than theirs is still running (anywhere on the
	// server): they come once it ends.
	ChangeFeedBehind(ctx context.Context, after string) (bool, error)
}

// ErrNoChanges is wrapped by ChangeLog.JobChanges for a job with no
// change record.
var ErrNoChanges = errors.New("no change record")
