package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Console is the ingest.ConsoleReader of a geoingest database: the
// operator's console, `geoingest jobs` and `geoingest verify` (verify.go,
// verifyscope.go, pending_verify.go) read through it. It only reads, so
// a connection as geoingest_analyst is enough (verify names what that
// role may not check).
type Console struct {
	q *db.Queries
}

var _ ingest.ConsoleReader = (*Console)(nil)

// NewConsole returns the console's reader on pool.
func NewConsole(pool *pgxpool.Pool) *Console { return &Console{q: db.New(pool)} }

// stateFilter turns a console state into the claim state, lease and
// ledger status the query filters on.
func stateFilter(state string) (claim, lease, status string) {
	switch state {
	case "":
		return "", "", ""
	case ingest.StateFailed:
		return "FAILED", "", ""
	case ingest.StateInFlight:
		return "CLAIMED", "live", ""
	case ingest.StateLeaseExpired:
		return "CLAIMED", "expired", ""
	case ingest.StateCommitted, "COMMITTED":
		return "COMMITTED", "", ""
	case "FAILED":
		return "FAILED", "", ""
	case "CLAIMED":
		return "CLAIMED", "", ""
	}
	return "COMMITTED", "", state
}

// ConsoleJobs implements ingest.ConsoleReader.
func (c *Console) ConsoleJobs(ctx context.Context, q ingest.JobQuery) (ingest.JobPage, error) {
	if err := q.Validate(); err != nil {
		return ingest.JobPage{}, err
	}
	p := db.ConsoleJobsParams{Target: q.Target, MaxRows: int32(q.Limit) + 1,
		Since: pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}}
	p.ClaimState, p.Lease, p.Status = stateFilter(q.State)
	p.Bucket, p.KeyPrefix = ingest.ParseSourcePrefix(q.Source)
	if !q.Since.IsZero() {
		p.Since = pgtype.Timestamptz{Time: q.Since, Valid: true}
	}
	if q.Cursor != "" {
		t, key, err := ingest.ParseCursor(q.Cursor, 1)
		if err != nil {
			return ingest.JobPage{}, err
		}
		p.HasCursor, p.CursorAt, p.CursorID = true, pgtype.Timestamptz{Time: t, Valid: true}, key[0]
	}
	rows, err := c.q.ConsoleJobs(ctx, p)
	if err != nil {
		return ingest.JobPage{}, ingest.Transientf("console jobs: %w", err)
	}
	page := ingest.JobPage{Jobs: make([]ingest.JobSummary, 0, min(len(rows), q.Limit))}
	for i, r := range rows {
		if i == q.Limit {
			last := rows[i-1]
			page.Next = ingest.FormatCursor(last.CreatedAt.Time, last.JobID)
			break
		}
		page.Jobs = append(page.Jobs, summary(jobRow{
			JobID: r.JobID, State: r.State, ClaimState: r.ClaimState, Bucket: r.SourceBucket, Key: r.SourceKey,
			Owner: r.Owner, LeaseUntil: r.LeaseUntil, Attempts: r.Attempts, LastError: r.LastError, Cause: r.FailureCause,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Target: r.TargetTable, PipelineVersion: r.PipelineVersion,
			Features: r.FeatureCount, AreaM2: r.TotalAreaM2, WriteSeconds: r.WriteSeconds, CommittedAt: r.CommittedAt,
			CRSMethod: r.CrsMethod}))
	}
	return page, nil
}

// jobRow is what ConsoleJobs and ConsoleJob both read of a job.
type jobRow struct {
	JobID, State, ClaimState, Bucket, Key, Owner, LastError string
	// Cause is the failure's code; NULL for a claim failed before
	// migration 0038 recorded it.
	Cause                                         pgtype.Text
	LeaseUntil, CreatedAt, UpdatedAt, CommittedAt pgtype.Timestamptz
	Attempts                                      int32
	Target, PipelineVersion, CRSMethod            string
	Features                                      int64
	AreaM2                                        float64
	WriteSeconds                                  pgtype.Float8
}

func summary(r jobRow) ingest.JobSummary {
	s := ingest.JobSummary{JobID: r.JobID, State: r.State, ClaimState: r.ClaimState,
		Source: ingest.Source{Bucket: r.Bucket, Key: r.Key}.String(), Target: r.Target,
		PipelineVersion: r.PipelineVersion, Features: r.Features, AreaM2: r.AreaM2, CRSMethod: r.CRSMethod,
		Attempts: r.Attempts, Reason: r.LastError, Owner: r.Owner, LeaseUntil: r.LeaseUntil.Time,
		ClaimedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time, CommittedAt: optTime(r.CommittedAt)}
	if r.WriteSeconds.Valid {
		v := math.Round(r.WriteSeconds.Float64*1000) / 1000
		s.WriteSeconds = &v
	}
	if r.State == ingest.StateFailed {
		if r.Cause.Valid {
			s.Cause = ingest.Cause(r.Cause.String)
			s.Hint = ingest.CauseHint(s.Cause)
		} else { // recorded before its cause was: read its words
			s.Hint = ingest.FailureHint(r.LastError)
		}
	}
	return s
}

var _ ingest.JobIDPrefixes = (*Console)(nil)

// JobIDsWithPrefix implements ingest.JobIDPrefixes: the ids of the claims
// and ledger rows that start with prefix, in order, at most limit.
func (c *Console) JobIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	ids, err := c.q.JobIDsWithPrefix(ctx, db.JobIDsWithPrefixParams{Prefix: prefix, MaxRows: int32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, ingest.Transientf("job ids with prefix: %w", err)
	}
	return ids, nil
}

// ConsoleJob implements ingest.ConsoleReader.
func (c *Console) ConsoleJob(ctx context.Context, jobID string) (ingest.JobRecord, error) {
	r, err := c.q.ConsoleJob(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.JobRecord{}, ingest.ErrNoSuchJob
	}
	if err != nil {
		return ingest.JobRecord{}, ingest.Transientf("console job: %w", err)
	}
	rec := ingest.JobRecord{
		Job: summary(jobRow{JobID: r.JobID, State: r.State, ClaimState: r.ClaimState, Bucket: r.SourceBucket, Key: r.SourceKey,
			Owner: r.Owner, LeaseUntil: r.LeaseUntil, Attempts: r.Attempts, LastError: r.LastError, Cause: r.FailureCause,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Target: r.TargetTable, PipelineVersion: r.PipelineVersion,
			Features: r.FeatureCount, AreaM2: r.TotalAreaM2, WriteSeconds: r.WriteSeconds, CommittedAt: r.CommittedAt,
			CRSMethod: r.CrsMethod}),
		Claim: ingest.ClaimRecord{State: r.ClaimState, Owner: r.Owner, LeaseUntil: r.LeaseUntil.Time, Attempts: r.Attempts,
			LastError: r.LastError, ClaimedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time},
	}
	events, err := c.q.ConsoleClaimEvents(ctx, jobID)
	if err != nil {
		return ingest.JobRecord{}, ingest.Transientf("console claim history: %w", err)
	}
	rec.Claim.History = make([]ingest.ClaimEvent, 0, len(events))
	for _, e := range events {
		rec.Claim.History = append(rec.Claim.History, ingest.ClaimEvent{At: e.At.Time, Event: e.Event, Owner: e.Owner,
			Attempt: e.Attempt, LeaseUntil: e.LeaseUntil.Time, Error: e.Error})
	}
	if !r.Committed {
		return rec, nil
	}
	rec.Ledger = &ingest.LedgerRow{Status: r.Status, Target: r.TargetTable, Pipeline: r.Pipeline,
		PipelineVersion: r.PipelineVersion, VersionToken: r.VersionToken, OrderToken: r.OrderToken,
		Params: json.RawMessage(r.Params), ContentHash: r.ContentHash, FeaturesChecksum: r.FeaturesChecksum,
		Features: r.FeatureCount, AreaM2: r.TotalAreaM2, SourceSRID: int(r.SourceSrid), Encoding: r.Encoding,
		SkippedNull: r.SkippedNull, SkippedType: r.SkippedType, SkippedCast: r.SkippedCast, RepairedInvalid: r.RepairedInvalid,
		LinearisedCurves: r.LinearisedCurves, DroppedZM: r.DroppedZm,
		CommittedAt: r.CommittedAt.Time, SourceCurrentJob: r.SourceCurrentJobID}
	crs, err := c.q.JobCRS(ctx, jobID)
	if err != nil {
		return ingest.JobRecord{}, ingest.Transientf("console job crs: %w", err)
	}
	for _, x := range crs {
		rec.CRS = append(rec.CRS, layerCRS(x))
	}
	hist, err := c.history(ctx, []db.ConsoleSourcesRow{{SourceBucket: r.SourceBucket, SourceKey: r.SourceKey,
		TargetTable: r.TargetTable, PipelineVersion: r.PipelineVersion}}, ingest.DefaultHistory)
	if err != nil {
		return ingest.JobRecord{}, err
	}
	rec.SourceHistory = hist[0]
	return rec, nil
}

// history reads the latest per generations of each source, one slice
// per source, in one query.
func (c *Console) history(ctx context.Context, srcs []db.ConsoleSourcesRow, per int) ([][]ingest.Generation, error) {
	p := db.ConsoleSourceHistoryParams{PerSource: int32(per)}
	for _, s := range srcs {
		p.Buckets = append(p.Buckets, s.SourceBucket)
		p.Keys = append(p.Keys, s.SourceKey)
		p.Targets = append(p.Targets, s.TargetTable)
		p.Versions = append(p.Versions, s.PipelineVersion)
	}
	out := make([][]ingest.Generation, len(srcs))
	if len(srcs) == 0 {
		return out, nil
	}
	rows, err := c.q.ConsoleSourceHistory(ctx, p)
	if err != nil {
		return nil, ingest.Transientf("console source history: %w", err)
	}
	for _, r := range rows {
		i := int(r.Ord) - 1
		out[i] = append(out[i], ingest.Generation{JobID: r.JobID, Status: r.Status, VersionToken: r.VersionToken,
			OrderToken: r.OrderToken, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, CommittedAt: r.CommittedAt.Time})
	}
	return out, nil
}

// ConsoleSources implements ingest.ConsoleReader.
func (c *Console) ConsoleSources(ctx context.Context, q ingest.SourceQuery) (ingest.SourcePage, error) {
	if err := q.Validate(); err != nil {
		return ingest.SourcePage{}, err
	}
	p := db.ConsoleSourcesParams{Target: q.Target, MaxRows: int32(q.Limit) + 1}
	p.Bucket, p.KeyPrefix = ingest.ParseSourcePrefix(q.Source)
	if q.Cursor != "" {
		t, key, err := ingest.ParseCursor(q.Cursor, 4)
		if err != nil {
			return ingest.SourcePage{}, err
		}
		p.HasCursor, p.CursorAt = true, pgtype.Timestamptz{Time: t, Valid: true}
		p.CursorBucket, p.CursorKey, p.CursorTarget, p.CursorVersion = key[0], key[1], key[2], key[3]
	}
	rows, err := c.q.ConsoleSources(ctx, p)
	if err != nil {
		return ingest.SourcePage{}, ingest.Transientf("console sources: %w", err)
	}
	var page ingest.SourcePage
	if len(rows) > q.Limit {
		last := rows[q.Limit-1]
		page.Next = ingest.FormatCursor(last.UpdatedAt.Time, last.SourceBucket, last.SourceKey, last.TargetTable, last.PipelineVersion)
		rows = rows[:q.Limit]
	}
	hist, err := c.history(ctx, rows, q.History)
	if err != nil {
		return ingest.SourcePage{}, err
	}
	page.Sources = make([]ingest.SourceSummary, 0, len(rows))
	for i, r := range rows {
		page.Sources = append(page.Sources, ingest.SourceSummary{
			SourceInfo: ingest.SourceInfo{Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(),
				Target: r.TargetTable, PipelineVersion: r.PipelineVersion, CurrentJob: r.CurrentJobID,
				Generations: r.Generations, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, UpdatedAt: r.UpdatedAt.Time},
			History: nonNil(hist[i])})
	}
	return page, nil
}

// ConsoleClaims implements ingest.ConsoleReader.
func (c *Console) ConsoleClaims(ctx context.Context, limit int) ([]ingest.ClaimInfo, error) {
	if limit <= 0 || limit > ingest.MaxPage {
		limit = ingest.DefaultPage
	}
	rows, err := c.q.ConsoleClaims(ctx, int32(limit))
	if err != nil {
		return nil, ingest.Transientf("console claims: %w", err)
	}
	out := make([]ingest.ClaimInfo, 0, len(rows))
	for _, r := range rows {
		state := ingest.StateLeaseExpired
		if r.Live {
			state = ingest.StateInFlight
		}
		out = append(out, ingest.ClaimInfo{JobID: r.JobID, State: state,
			Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(), Owner: r.Owner,
			LeaseUntil: r.LeaseUntil.Time, LeaseLeftSeconds: math.Round(r.LeaseLeftSeconds*10) / 10,
			Attempts: r.Attempts, LastError: r.LastError, ClaimedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time})
	}
	return out, nil
}

// ConsoleOverview implements ingest.ConsoleReader.
func (c *Console) ConsoleOverview(ctx context.Context) (ingest.Overview, error) {
	st, err := c.q.ConsoleStatus(ctx)
	if err != nil {
		return ingest.Overview{}, ingest.Transientf("console status: %w", err)
	}
	counts, err := c.q.ConsoleStateCounts(ctx)
	if err != nil {
		return ingest.Overview{}, ingest.Transientf("console state counts: %w", err)
	}
	o := ingest.Overview{Now: st.Now.Time, States: map[string]int64{}, Sources: st.SourcesCurrent,
		LastReportRefresh: optTime(st.LastReportRefresh)}
	for _, r := range counts {
		o.States[r.State] = r.Jobs
		o.Jobs += r.Jobs
	}
	return o, nil
}
