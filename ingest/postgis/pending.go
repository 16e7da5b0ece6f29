package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The guards of the write gate (ingest.Guards): after a version's
// features are written and before it replaces its source's current
// generation, guard compares the two. A version that trips a guard is
// committed as a pending generation: status 'pending', its features in a
// table of its own that is never attached to the target (readers do not
// see it; migration 0027), the source's current generation untouched.
// Decide attaches it (approve) or drops it (reject) later, under the
// source's row lock, in one transaction.

// guardActor is the actor recorded for what the write gate decides on
// its own (a version superseded by a newer one).
const guardActor = "geoingest"

// guard records the version's stats (for the next version's guards) and
// runs the guards against the source's current generation. When they
// hold the version it sets g.held: the gate then commits it as pending
// (res says so), or superseded when a newer version of the source is
// pending already, instead of making it current. Older pending versions
// of the source are superseded either way: a source keeps at most its
// newest pending version.
//
// The version's rows are in the job's table (a full write), or, with
// incoming, in pg_temp.geoingest_incoming (a diff write, diffwrite.go,
// before it applies anything): a held version is then moved whole into a
// table of its own, so that an approval needs neither the file nor the
// diff's base.
func (s *Store) guard(ctx context.Context, g *gate, job ingest.Job, keys map[string]uint8, res *ingest.WriteResult, incoming bool) (held bool, err error) {
	defer func(t0 time.Time) { s.guardNanos.Add(int64(time.Since(t0))) }(time.Now())
	version, err := s.versionStats(ctx, g, job.ID, g.ref, true, incoming)
	if err != nil {
		return false, err
	}
	version.Keys = keys
	if !g.src.CurrentJobID.Valid && version.Features > 0 && g.keys != nil {
		// A first version's key that no feature has: a typo, refused
		// (later versions: the drift guard holds them).
		var layers []string
		for _, l := range g.keys.Layers() {
			layers = append(layers, l.Name)
		}
		if err := ingest.KeyInNoFeature(job.Params, keys, layers); err != nil {
			return false, err
		}
	}
	kj, err := json.Marshal(keys)
	if err != nil {
		return false, err
	}
	st := db.RecordJobStatsParams{JobID: job.ID, Keys: kj}
	if version.HasBBox {
		st.MinX, st.MinY, st.MaxX, st.MaxY = f8(version.BBox[0]), f8(version.BBox[1]), f8(version.BBox[2]), f8(version.BBox[3])
	}
	if err := g.q.RecordJobStats(ctx, st); err != nil {
		return false, fmt.Errorf("record version stats: %w", err)
	}
	newer, err := s.supersedePending(ctx, g, job)
	if err != nil || !g.src.CurrentJobID.Valid {
		return false, err
	}
	cur, err := s.versionStats(ctx, g, g.src.CurrentJobID.String, 0, false, false)
	if err != nil {
		return false, err
	}
	guards := job.Guards
	guards.KeyFields = job.Params.Key
	if m := job.Params.TheMapping(); m != nil {
		// Under a mapping the key names columns; the version has the
		// source's fields, and each mapped one is required.
		guards.KeyFields = m.SourceFields()
	}
	sum := ingest.CheckGuards(guards, cur, version)
	sum.CurrentID = g.src.CurrentJobID.String
	for i := range sum.Trips {
		// The quarantine's hint, with this version's id (as the tables
		// print it) for its JOB.
		sum.Trips[i].Detail = strings.Replace(sum.Trips[i].Detail, "geoingest quarantine list JOB)", "geoingest quarantine list "+job.ID[:min(12, len(job.ID))]+")", 1)
	}
	if len(sum.Trips) == 0 {
		if g.emptied && !job.Guards.Force {
			// No guard held a version of nothing (a shrink threshold
			// of 100 %): refused rather than applied unasked.
			return false, emptiedError(job.Params.Target)
		}
		return false, nil
	}
	summary, err := json.Marshal(sum)
	if err != nil {
		return false, err
	}
	if job.Guards.Force {
		res.Reason = "forced (" + job.Guards.Reason + "): " + sum.Reason()
		actor := g.actor
		if job.Guards.Actor != "" {
			actor = job.Guards.Actor
		}
		_, err := g.q.InsertGuardEvent(ctx, db.InsertGuardEventParams{JobID: job.ID, Action: "forced",
			Actor: actor, Reason: job.Guards.Reason + " [" + sum.Reason() + "]", Summary: summary})
		return false, err
	}
	// Held: out of the readers' sight, and not attached at commit.
	target := job.Params.Target
	var ref int64
	if incoming {
		// The rows of a diff write that the server has not seen yet are
		// sent now: a held version is kept whole.
		if g.version != nil {
			if _, err := sendSpooled(ctx, g, g.version, "all"); err != nil {
				return false, fmt.Errorf("hold pending version: %w", err)
			}
			if g.pre != nil {
				// The features kept by their bytes, from their rows
				// (prefilter.go).
				if _, err := g.q.PrefilterSend(ctx, db.PrefilterSendParams{TargetTable: target,
					OldRef: g.pre.oldRef, EveryOne: true}); err != nil {
					return false, fmt.Errorf("hold pending version: %w", normaliseErr(err))
				}
			}
		}
		ref = newJobRef(true)
		if _, err := g.q.CreateJobTable(ctx, db.CreateJobTableParams{TargetTable: target, JobRef: ref}); err != nil {
			return false, fmt.Errorf("hold pending version: %w", err)
		}
		if _, err := g.q.PendIncoming(ctx, db.PendIncomingParams{TargetTable: target, NewRef: ref}); err != nil {
			return false, fmt.Errorf("hold pending version: %w", err)
		}
		fin, err := g.q.FinishJobTable(ctx, db.FinishJobTableParams{TargetTable: target, JobRef: ref}) // its index
		if err != nil {
			return false, fmt.Errorf("hold pending version: %w", normaliseErr(err))
		}
		if err := g.q.SetJobChecksum(ctx, db.SetJobChecksumParams{JobID: job.ID, FeaturesChecksum: fin.FeaturesChecksum}); err != nil {
			return false, fmt.Errorf("hold pending version: %w", err)
		}
		if err := g.q.SetJobRef(ctx, db.SetJobRefParams{JobID: job.ID, JobRef: ref}); err != nil {
			return false, err
		}
	} else if ref, err = g.q.PendJobTable(ctx, db.PendJobTableParams{TargetTable: target, JobID: job.ID, OldRef: g.ref, NewRef: newJobRef(true)}); err != nil {
		return false, fmt.Errorf("hold pending version: %w", err)
	}
	g.ref, g.attach, g.cells, g.held = ref, "", nil, true
	if newer != "" {
		// A newer version of the source is pending already: this one
		// will never be applied.
		if err := g.q.DropPendingTable(ctx, db.DropPendingTableParams{TargetTable: target, JobRef: ref}); err != nil {
			return false, err
		}
		if _, err := g.finish(ctx, job.ID, ingest.Superseded, "superseded"); err != nil {
			return false, err
		}
		if _, err := g.q.InsertGuardEvent(ctx, db.InsertGuardEventParams{JobID: job.ID, Action: "superseded", Actor: guardActor,
			Reason: "held (" + sum.Reason() + ") while a newer version, " + newer + ", was pending", Summary: summary}); err != nil {
			return false, err
		}
		*res = ingest.WriteResult{Outcome: ingest.Superseded}
		return true, nil
	}
	if err := g.q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: job.ID, Status: "pending"}); err != nil {
		return false, err
	}
	if _, err := g.q.InsertGuardEvent(ctx, db.InsertGuardEventParams{JobID: job.ID, Action: "held", Actor: g.actor,
		Reason: sum.Reason(), Summary: summary}); err != nil {
		return false, err
	}
	res.Outcome, res.Reason, res.Replaced, res.Changes = ingest.Pending, sum.Reason(), "", nil
	return true, nil
}

// supersedePending supersedes the pending versions of g's source older
// than job (their features dropped), and returns a pending version newer
// than job, if there is one.
func (s *Store) supersedePending(ctx context.Context, g *gate, job ingest.Job) (newer string, err error) {
	others, err := g.q.OlderPendingJobs(ctx, db.OlderPendingJobsParams{SourceBucket: g.srcKey.SourceBucket, SourceKey: g.srcKey.SourceKey,
		TargetTable: g.srcKey.TargetTable, PipelineVersion: g.srcKey.PipelineVersion, JobID: job.ID})
	if err != nil {
		return "", err
	}
	for _, o := range others {
		if ingest.CompareOrder(o.OrderToken, job.Source.Order) > 0 {
			newer = o.JobID
			continue
		}
		if err := supersedeHeld(ctx, g.q, job.Params.Target, o.JobID, o.JobRef, guardActor,
			"a newer version of the source arrived: "+job.ID); err != nil {
			return "", err
		}
	}
	return newer, nil
}

// supersedeHeld drops a pending version's features and records it
// superseded.
func supersedeHeld(ctx context.Context, q *db.Queries, target, jobID string, ref int64, actor, reason string) error {
	if err := q.DropPendingTable(ctx, db.DropPendingTableParams{TargetTable: target, JobRef: ref}); err != nil {
		return err
	}
	if err := q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: jobID, Status: "superseded"}); err != nil {
		return err
	}
	_, err := q.InsertGuardEvent(ctx, db.InsertGuardEventParams{JobID: jobID, Action: "superseded", Actor: actor, Reason: reason, Summary: []byte("{}")})
	return err
}

// versionStats reads what the guards compare of jobID: its ledger counts,
// and its extent and keys as recorded (or, with measure, its extent as
// the prepare workers measured it, g.extent, else measured from its rows
// under ref, or in geoingest_incoming).
func (s *Store) versionStats(ctx context.Context, g *gate, jobID string, ref int64, measure, incoming bool) (ingest.VersionStats, error) {
	j, err := g.q.GetJob(ctx, jobID)
	if err != nil {
		return ingest.VersionStats{}, fmt.Errorf("read ledger of %s: %w", jobID, err)
	}
	v := ingest.VersionStats{Features: j.FeatureCount, AreaM2: j.TotalAreaM2, LeftOut: j.SkippedNull + j.SkippedType + j.SkippedCast}
	if measure && v.LeftOut > 0 {
		// The quarantine's counts, by rule (quarantine.go): what the
		// quarantine guard judges and names.
		rules, err := g.q.QuarantineCountsByRule(ctx, jobID)
		if err != nil {
			return v, fmt.Errorf("quarantine of %s: %w", jobID, err)
		}
		if j.Quarantined.Valid {
			v.LeftOut, v.LeftOutByRule = 0, make(map[string]int64, len(rules))
			for _, r := range rules {
				v.LeftOut += r.N
				v.LeftOutByRule[r.Rule] = r.N
			}
		}
	}
	if measure && g.extent != nil {
		v.BBox, v.HasBBox = *g.extent, true
		return v, nil
	}
	if measure {
		var e db.JobExtentRow
		switch {
		case incoming && g.version != nil:
			// A diff write's version: its extent as it streamed, with that
			// of the rows the server transformed or repaired.
			var ie db.IncomingExtentRow
			ie, err = g.q.IncomingExtent(ctx)
			e = db.JobExtentRow(ie)
			if sp := g.version; sp.ok && err == nil {
				if math.IsNaN(e.MinX) {
					e = db.JobExtentRow{MinX: sp.extent[0], MinY: sp.extent[1], MaxX: sp.extent[2], MaxY: sp.extent[3]}
				} else {
					e = db.JobExtentRow{MinX: math.Min(e.MinX, sp.extent[0]), MinY: math.Min(e.MinY, sp.extent[1]),
						MaxX: math.Max(e.MaxX, sp.extent[2]), MaxY: math.Max(e.MaxY, sp.extent[3])}
				}
			}
		case incoming:
			var ie db.IncomingExtentRow
			ie, err = g.q.IncomingExtent(ctx)
			e = db.JobExtentRow(ie)
		default:
			e, err = g.q.JobExtent(ctx, db.JobExtentParams{TargetTable: j.TargetTable, JobRef: ref})
		}
		if err != nil {
			return v, fmt.Errorf("extent of %s: %w", jobID, err)
		}
		if !math.IsNaN(e.MinX) {
			v.BBox, v.HasBBox = [4]float64{e.MinX, e.MinY, e.MaxX, e.MaxY}, true
		}
		return v, nil
	}
	st, err := g.q.JobStats(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, nil // written before the guards: counts only
	}
	if err != nil {
		return v, fmt.Errorf("stats of %s: %w", jobID, err)
	}
	if st.MinX.Valid {
		v.BBox, v.HasBBox = [4]float64{st.MinX.Float64, st.MinY.Float64, st.MaxX.Float64, st.MaxY.Float64}, true
	}
	if err := json.Unmarshal(st.Keys, &v.Keys); err != nil {
		return v, fmt.Errorf("stats of %s: keys: %w", jobID, err)
	}
	return v, nil
}

func f8(v float64) pgtype.Float8 { return pgtype.Float8{Float64: v, Valid: true} }

// ListPending implements ingest.PendingVersions.
func (s *Store) ListPending(ctx context.Context) ([]ingest.PendingInfo, error) {
	rows, err := s.q.PendingJobs(ctx)
	if err != nil {
		return nil, ingest.Transientf("list pending versions: %w", err)
	}
	out := make([]ingest.PendingInfo, len(rows))
	for i, r := range rows {
		out[i] = ingest.PendingInfo{JobID: r.JobID, Source: ingest.Source{Bucket: r.SourceBucket, Key: r.SourceKey}.String(),
			Target: r.TargetTable, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, Reason: r.Reason, Summary: r.Summary,
			Current: r.CurrentJobID, Committed: r.CommittedAt.Time}
	}
	return out, nil
}

// PendingVersion implements ingest.PendingLookup: jobID's features, area
// and the reason it was held, while it is pending.
func (s *Store) PendingVersion(ctx context.Context, jobID string) (ingest.PendingInfo, bool, error) {
	rows, err := s.q.PendingJob(ctx, jobID)
	if err != nil {
		return ingest.PendingInfo{}, false, ingest.Transientf("read pending version %s: %w", jobID, err)
	}
	if len(rows) == 0 {
		return ingest.PendingInfo{}, false, nil
	}
	r := rows[0]
	return ingest.PendingInfo{JobID: r.JobID, Features: r.FeatureCount, AreaM2: r.TotalAreaM2, Reason: r.Reason,
		Quarantined: r.Quarantined}, true, nil
}

// GuardEvents implements ingest.PendingVersions.
func (s *Store) GuardEvents(ctx context.Context, jobID string) ([]ingest.GuardEvent, error) {
	rows, err := s.q.GuardEvents(ctx, jobID)
	if err != nil {
		return nil, ingest.Transientf("guard events of %s: %w", jobID, err)
	}
	out := make([]ingest.GuardEvent, len(rows))
	for i, r := range rows {
		out[i] = ingest.GuardEvent{Action: r.Action, Actor: r.Actor, Reason: r.Reason, Summary: r.Summary, At: r.At.Time}
	}
	return out, nil
}

// Decide implements ingest.PendingVersions: one transaction under the
// source's row lock, so that a decision and a new version of the source
// are applied one after the other. An approval of a version older than
// the source's current order (a newer version, or a delete, was applied
// meanwhile) supersedes it instead, by the version order rules.
func (s *Store) Decide(ctx context.Context, jobID string, d ingest.Decision) (_ ingest.DecisionResult, err error) {
	defer func() { err = classify(err) }()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ingest.DecisionResult{}, ingest.Transientf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := s.q.WithTx(tx)
	j, err := q.GetJob(ctx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.DecisionResult{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("job %s: %w", jobID, ingest.ErrNoSuchJob)}
	}
	if err != nil {
		return ingest.DecisionResult{}, ingest.Transientf("read ledger: %w", err)
	}
	g := &gate{tx: tx, q: q, order: j.OrderToken, ref: j.JobRef, actor: d.Actor, srcKey: db.EnsureSourceParams{
		SourceBucket: j.SourceBucket, SourceKey: j.SourceKey, TargetTable: j.TargetTable, PipelineVersion: j.PipelineVersion},
		wholeAtCommit: true} // the generation an approval replaces is retired as a write's is (retirewhole.go)
	if g.src, err = q.LockSource(ctx, db.LockSourceParams(g.srcKey)); err != nil {
		return ingest.DecisionResult{}, fmt.Errorf("lock source: %w", err)
	}
	if j, err = q.GetJob(ctx, jobID); err != nil { // again, under the lock
		return ingest.DecisionResult{}, err
	}
	g.ref = j.JobRef
	res := ingest.DecisionResult{JobID: jobID, Target: j.TargetTable, Actor: d.Actor}
	if j.Status != "pending" {
		return s.decidedBefore(ctx, q, j, d, res)
	}
	action, status := "rejected", "rejected"
	switch {
	case !d.Approve:
	case ingest.CompareOrder(g.src.CurrentOrder, j.OrderToken) > 0:
		action, status = "superseded", "superseded"
	default:
		action, status = "approved", "current"
	}
	if action != "approved" {
		if err := q.DropPendingTable(ctx, db.DropPendingTableParams{TargetTable: j.TargetTable, JobRef: j.JobRef}); err != nil {
			return res, err
		}
	} else {
		// Identity and the change record, as a write would make them,
		// while the replaced rows are still there (changes.go).
		params, err := paramsFromLedger(j.Params)
		if err != nil {
			return res, fmt.Errorf("parameters of %s: %w", jobID, err)
		}
		params.Key, params.MatchIoU, params.DuplicateKeys, err = matchFromLedger(j.Params)
		if err != nil {
			return res, fmt.Errorf("parameters of %s: %w", jobID, err)
		}
		job := ingest.Job{ID: jobID, Source: ingest.Source{Bucket: j.SourceBucket, Key: j.SourceKey, VersionToken: j.VersionToken, Order: j.OrderToken}, Params: params}
		if err := q.SetHistoryJob(ctx, jobID); err != nil { // what it retires is history (history.go)
			return res, err
		}
		if _, err := g.matchGeneration(ctx, job); err != nil {
			return res, err
		}
		if g.src.CurrentJobID.Valid {
			res.Replaced = g.src.CurrentJobID.String
			if err := g.retireCurrent(ctx, res.Replaced, "replaced"); err != nil {
				return res, err
			}
		}
		if err := g.setCurrent(ctx, pgtype.Text{String: jobID, Valid: true}); err != nil {
			return res, err
		}
	}
	if err := q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: jobID, Status: status}); err != nil {
		return res, err
	}
	reason := d.Reason
	if action == "superseded" {
		reason = "approved (" + d.Reason + ") after a newer version of the source was applied"
	}
	n, err := q.InsertGuardEvent(ctx, db.InsertGuardEventParams{JobID: jobID, Action: action, Actor: d.Actor, Reason: reason, Summary: []byte("{}")})
	if err != nil {
		return res, err
	}
	if n == 0 {
		return res, fmt.Errorf("pending version %s was decided concurrently", jobID) // the source lock rules it out
	}
	// The answer's time is the audit trail's (a repeated decision reports
	// the same), not the zero time.
	evs, err := q.GuardEvents(ctx, jobID)
	if err != nil {
		return res, err
	}
	for _, e := range evs {
		if e.Action == action {
			res.At = e.At.Time
		}
	}
	if action == "approved" {
		// The replaced generation into the history (its partition kept
		// whole when it can be, else its rows copied), then the approved
		// one attached: the write gate's end (commitGate).
		if len(g.whole) > 0 {
			if err := s.retireWhole(ctx, g); err != nil {
				return res, err
			}
			ingest.HookAt(ctx, ingest.HookDuringRetire, ingest.HookWhere{Owner: d.Actor, Job: jobID})
		}
		if err := s.attachOwnPartition(ctx, g, j.TargetTable); err != nil {
			return res, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, ingest.Transientf("commit: %w", err)
	}
	res.Action = action
	return res, nil
}

// decidedBefore answers a decision on a job that is no longer pending:
// the first decision when it was one (idempotent), else an error.
func (s *Store) decidedBefore(ctx context.Context, q *db.Queries, j db.Job, d ingest.Decision, res ingest.DecisionResult) (ingest.DecisionResult, error) {
	evs, err := q.GuardEvents(ctx, j.JobID)
	if err != nil {
		return res, err
	}
	for _, e := range evs {
		if e.Action != "approved" && e.Action != "rejected" && e.Action != "superseded" {
			continue
		}
		res.Action, res.Actor, res.At, res.Already = e.Action, e.Actor, e.At.Time, true
		want := "rejected"
		if d.Approve {
			want = "approved"
		}
		if e.Action != want && e.Action != "superseded" {
			return res, &ingest.Error{Kind: ingest.Precondition, Err: fmt.Errorf("job %s was %s by %s at %s (%s): it cannot be %s now",
				j.JobID, e.Action, e.Actor, e.At.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Reason, want)}
		}
		return res, nil
	}
	return res, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("job %s is %s: %w", j.JobID, j.Status, ingest.ErrNotPending)}
}

// matchFromLedger reads the matching parameters of a job's ledger params
// (Params.Map's key, match_iou and duplicate_keys).
func matchFromLedger(raw []byte) (key []string, iou float64, dup string, err error) {
	var m struct {
		Key           string  `json:"key"`
		MatchIoU      float64 `json:"match_iou"`
		DuplicateKeys string  `json:"duplicate_keys"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, 0, "", err
	}
	key, err = ingest.ParseKey(m.Key)
	return key, m.MatchIoU, m.DuplicateKeys, err
}
