package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The change record of a job (migration 0025): written by the job's
// write-gate transaction, between its features and the retirement of the
// generation they replace, so it is exactly once with the job. A
// duplicate delivery stops at the ledger before it, and a superseded
// version does not reach it.

// ChangesChannel is the channel of the pg_notify each change record
// sends, inside the write gate's transaction (so only if it commits).
const ChangesChannel = "geoingest_changes"

// matchGeneration matches the rows job has just written with those of
// the source's current generation (which must still be present), gives
// the matched rows their predecessors' feature ids, records the changes
// and wakes the feed's listeners. A key that is not unique fails the job
// when its parameters say so.
func (g *gate) matchGeneration(ctx context.Context, job ingest.Job) (*ingest.Changes, error) {
	key, minIoU, failOnDuplicates := job.Params.Match()
	if key == nil {
		key = []string{}
	}
	var base string
	var oldRef int64
	if g.src.CurrentJobID.Valid {
		base = g.src.CurrentJobID.String
		ref, err := g.q.JobRefOf(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("ref of %s: %w", base, err)
		}
		oldRef = ref
	}
	if base == "" && g.extent != nil && g.rows > 0 {
		// A source's first version, whose rows the workers measured:
		// recorded without a pass over them.
		b := *g.extent // ST_Extent's box is exact, not the rows' float boxes
		bbox, err := g.q.RecordFirstVersion(ctx, db.RecordFirstVersionParams{TargetTable: job.Params.Target, JobID: job.ID,
			Added: g.rows, MinX: b[0], MinY: b[1], MaxX: b[2], MaxY: b[3]})
		if err != nil {
			return nil, fmt.Errorf("record changes: %w", normaliseErr(err))
		}
		return g.changesOf(ctx, job, base, db.MatchGenerationRow{Added: g.rows, Bbox: bbox})
	}
	m, err := g.q.MatchGeneration(ctx, db.MatchGenerationParams{TargetTable: job.Params.Target, JobID: job.ID,
		BaseJobID: base, NewRef: g.ref, OldRef: oldRef, KeyFields: key, MinIou: minIoU})
	if err != nil {
		return nil, fmt.Errorf("match features: %w", normaliseErr(err))
	}
	if failOnDuplicates && m.DuplicateKeys > 0 {
		return nil, duplicateKeysError(key, m.DuplicateKeys)
	}
	return g.changesOf(ctx, job, base, m)
}

func duplicateKeysError(key []string, n int64) error {
	return ingest.Permanentf("key %v is not unique: %d features share a key value with another (duplicate-keys=fail)", key, n)
}

// changesOf is the change record of m, the match of job's rows against
// base's, and wakes the feed's listeners.
func (g *gate) changesOf(ctx context.Context, job ingest.Job, base string, m db.MatchGenerationRow) (*ingest.Changes, error) {
	c := &ingest.Changes{Job: job.ID, Target: job.Params.Target, Bucket: job.Source.Bucket, Key: job.Source.Key, Base: base,
		Counts:        ingest.ChangeCounts{Added: m.Added, Removed: m.Removed, Geometry: m.Geometry, Attributes: m.Attributes, Unchanged: m.Unchanged},
		Matched:       ingest.MatchCounts{Key: m.ByKey, Content: m.ByContent, Overlap: m.ByOverlap},
		DuplicateKeys: m.DuplicateKeys, Lineage: m.Lineage, BBox: ingest.GeoJSON(m.Bbox), RecordedAt: time.Now().UTC()}
	return c, g.notifyChanges(ctx, c)
}

// recordRetire records a delete job's changes: the current generation's
// features removed.
func (g *gate) recordRetire(ctx context.Context, job ingest.Job) (*ingest.Changes, error) {
	if !g.src.CurrentJobID.Valid {
		return nil, nil
	}
	base := g.src.CurrentJobID.String
	ref, err := g.q.JobRefOf(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("ref of %s: %w", base, err)
	}
	m, err := g.q.RecordRetire(ctx, db.RecordRetireParams{TargetTable: job.Params.Target, JobID: job.ID, BaseJobID: base, OldRef: ref})
	if err != nil {
		return nil, fmt.Errorf("record changes: %w", err)
	}
	c := &ingest.Changes{Job: job.ID, Target: job.Params.Target, Bucket: job.Source.Bucket, Key: job.Source.Key, Base: base,
		Counts: ingest.ChangeCounts{Removed: m.Removed}, BBox: ingest.GeoJSON(m.Bbox), RecordedAt: time.Now().UTC()}
	return c, g.notifyChanges(ctx, c)
}

// notifyPayload is the pg_notify payload: small, a wake-up, never the
// record itself (read it from the feed).
type notifyPayload struct {
	Bucket string              `json:"bucket"`
	Key    string              `json:"key"`
	Target string              `json:"target_table"`
	Job    string              `json:"job"`
	Counts ingest.ChangeCounts `json:"counts"`
	BBox   []float64           `json:"bbox,omitempty"` // [minx, miny, maxx, maxy]
}

func (g *gate) notifyChanges(ctx context.Context, c *ingest.Changes) error {
	p := notifyPayload{Bucket: c.Bucket, Key: c.Key, Target: c.Target, Job: c.Job, Counts: c.Counts, BBox: geoJSONBounds(string(c.BBox))}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if len(b) > 7000 { // pg_notify's limit is 8000 bytes: a very long key is cut from the wake-up
		p.Key = ""
		if b, err = json.Marshal(p); err != nil {
			return err
		}
	}
	return g.q.NotifyChanges(ctx, string(b))
}

// geoJSONBounds is the bounds of a GeoJSON geometry's coordinates (nil
// for none).
func geoJSONBounds(geo string) []float64 {
	if geo == "" {
		return nil
	}
	var g struct {
		Coordinates json.RawMessage `json:"coordinates"`
	}
	if json.Unmarshal([]byte(geo), &g) != nil {
		return nil
	}
	var b []float64
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var pt []float64
		if json.Unmarshal(raw, &pt) == nil && len(pt) >= 2 {
			if b == nil {
				b = []float64{pt[0], pt[1], pt[0], pt[1]}
			}
			b[0], b[1] = min(b[0], pt[0]), min(b[1], pt[1])
			b[2], b[3] = max(b[2], pt[0]), max(b[3], pt[1])
			return
		}
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) == nil {
			for _, p := range parts {
				walk(p)
			}
		}
	}
	walk(g.Coordinates)
	return b
}

var _ ingest.ChangeLog = (*Store)(nil)

// JobChanges returns job's change record, and with features its changed
// features.
func (s *Store) JobChanges(ctx context.Context, job string, features bool) (ingest.Changes, []ingest.FeatureChange, error) {
	r, err := s.q.JobChangeCounts(ctx, job)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.Changes{}, nil, fmt.Errorf("job %s: %w", job, ingest.ErrNoChanges)
	}
	if err != nil {
		return ingest.Changes{}, nil, err
	}
	c := changesOf(db.ChangeFeedRow(r))
	if !features {
		return c, nil, nil
	}
	rows, err := s.q.JobFeatureChanges(ctx, job)
	if err != nil {
		return c, nil, err
	}
	fs := make([]ingest.FeatureChange, len(rows))
	at := make(map[int64]int, len(rows))
	for i, r := range rows {
		fs[i] = ingest.FeatureChange{Job: r.JobID, FeatureID: r.FeatureID, Kind: r.Kind, MatchedBy: r.MatchedBy,
			OldBBox: ingest.GeoJSON(r.OldBbox), NewBBox: ingest.GeoJSON(r.NewBbox), AreaDeltaM2: r.AreaDeltaM2}
		at[r.FeatureID] = i
	}
	if c.Lineage == 0 {
		return c, fs, nil
	}
	pairs, err := s.q.JobLineage(ctx, job)
	if err != nil {
		return c, nil, err
	}
	for _, p := range pairs {
		// A removed feature keeps its id and an added one has a new id,
		// so an id names one side's feature.
		if i, ok := at[p.OldFeatureID]; ok && fs[i].Kind == "removed" {
			fs[i].Successors = append(fs[i].Successors, p.NewFeatureID)
		}
		if i, ok := at[p.NewFeatureID]; ok && fs[i].Kind == "added" {
			fs[i].Predecessors = append(fs[i].Predecessors, p.OldFeatureID)
		}
	}
	for i := range fs {
		slices.Sort(fs[i].Predecessors) // pairs come in old id order
	}
	return c, fs, nil
}

// SourceChanges returns the change records of a source's jobs recorded
// at or after since, oldest first.
func (s *Store) SourceChanges(ctx context.Context, bucket, key string, since time.Time) ([]ingest.Changes, error) {
	rows, err := s.q.SourceChangeJobs(ctx, db.SourceChangeJobsParams{SourceBucket: bucket, SourceKey: key, Since: tstz(since)})
	if err != nil {
		return nil, err
	}
	out := make([]ingest.Changes, len(rows))
	for i, r := range rows {
		out[i] = changesOf(db.ChangeFeedRow(r))
	}
	return out, nil
}

// ChangeFeed returns at most limit change records committed after the
// cursor after ("" or "0": from the start), in commit-safe order: a
// record never appears behind a cursor already returned. Each record's
// Cursor is the position to resume after it.
func (s *Store) ChangeFeed(ctx context.Context, after string, limit int) ([]ingest.Changes, error) {
	after, err := feedCursor(after)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.ChangeFeed(ctx, db.ChangeFeedParams{After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("change feed after %q: %w", after, err)
	}
	if len(rows) == 0 && after != "0" {
		// A cursor this database never handed out (one kept from another
		// database, or a restored one) would wait silently until its
		// transaction ids caught up: refused instead.
		next, err := s.q.ChangeFeedNext(ctx)
		if err != nil {
			return nil, fmt.Errorf("change feed after %q: %w", after, err)
		}
		a, _ := strconv.ParseUint(after, 10, 64)
		if n, err := strconv.ParseUint(next, 10, 64); err == nil && a >= n {
			return nil, ingest.Permanentf("change feed cursor %s: no record of this database has it (its transactions are below %s): a cursor of another database, or of one since restored?", after, next)
		}
	}
	out := make([]ingest.Changes, len(rows))
	for i, r := range rows {
		out[i] = changesOf(r)
	}
	return out, nil
}

// ChangeFeedBehind says whether records committed after the cursor after
// wait behind a transaction still running (ingest.ChangeLog).
func (s *Store) ChangeFeedBehind(ctx context.Context, after string) (bool, error) {
	after, err := feedCursor(after)
	if err != nil {
		return false, err
	}
	behind, err := s.q.ChangeFeedBehind(ctx, after)
	if err != nil {
		return false, fmt.Errorf("change feed after %q: %w", after, err)
	}
	return behind, nil
}

// feedCursor checks a change feed cursor: "" is the feed's start ("0"),
// else the cursor of a record (a whole number).
func feedCursor(after string) (string, error) {
	if after == "" {
		return "0", nil
	}
	if _, err := strconv.ParseUint(after, 10, 64); err != nil {
		return "", ingest.Permanentf("change feed cursor %q: want the cursor of a record (a whole number)", after)
	}
	return after, nil
}

func changesOf(r db.ChangeFeedRow) ingest.Changes {
	return ingest.Changes{Job: r.JobID, Target: r.TargetTable, Bucket: r.SourceBucket, Key: r.SourceKey, Base: r.BaseJobID,
		Counts:        ingest.ChangeCounts{Added: r.Added, Removed: r.Removed, Geometry: r.Geometry, Attributes: r.Attributes, Unchanged: r.Unchanged},
		Matched:       ingest.MatchCounts{Key: r.ByKey, Content: r.ByContent, Overlap: r.ByOverlap},
		DuplicateKeys: r.DuplicateKeys, Lineage: r.Lineage, BBox: ingest.GeoJSON(r.Bbox), RecordedAt: r.RecordedAt.Time.UTC(), Cursor: r.Cursor}
}

func tstz(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

// SourceKnown reports whether any job was ever recorded for the source
// (ingest.SourceLookup).
func (s *Store) SourceKnown(ctx context.Context, bucket, key string) (bool, error) {
	return s.q.SourceHasJobs(ctx, db.SourceHasJobsParams{SourceBucket: bucket, SourceKey: key})
}
