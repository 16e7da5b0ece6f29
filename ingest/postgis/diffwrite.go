package postgis

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// A new version of a source that has a current generation writes only
// what changed (migrations 0026 and 0029, docs/design.md "Versions as
// changes"). Inside the write gate, under the source's row lock, so
// against the generation that is current now (a diff can never be
// stale):
//
//  1. the version streams once: each row's match columns (its key and
//     content hashes, computed by the prepare workers) are copied into a
//     temporary table (geoingest_version), the rows themselves into a
//     local spool (diffspool.go); the rows the server must measure, check
//     or repair are then sent whole (into geoingest_incoming) and checked
//     as a full load would check them: the ledger's count and area are
//     the full load's;
//  2. the match columns are matched with the current generation's stored
//     ones, by key then by content, in one join (geoingest_diff_plan);
//     only the rows that are not unchanged are sent whole, the overlap
//     rule runs on what is left unmatched, the changes are recorded, and
//     in the current generation's storage the removed and changed rows
//     are deleted and the added and changed rows inserted; unchanged rows
//     are not touched, and the ledger's checksum is the replaced
//     generation's less what was deleted plus what was inserted
//     (geoingest_diff_apply);
//  3. the job takes over the replaced job's job_ref, and the replaced job
//     gets a fresh one with no rows (unless most rows changed and the job
//     has a table of its own: every row of the version is then streamed
//     from the spool straight into it, with the feature id the match gave
//     it (migration 0037), and the old generation retired as a full
//     replace retires it): the new generation's rows are then
//     found by the new job's ref, as every reader, verify, replay and the
//     compactor find a generation's rows.
//
// One transaction: a reader sees the old generation or the new one, never
// a mix; a kill at any point rolls everything back.

// writeDiff is Write's body for a source with a current generation.
func (s *Store) writeDiff(ctx context.Context, g *gate, job ingest.Job, r *ingest.KeysReader, pf *ingest.Prefilter, res *ingest.WriteResult) error {
	target := job.Params.Target
	base := g.src.CurrentJobID.String
	oldRef, err := g.q.JobRefOf(ctx, base)
	if err != nil {
		return fmt.Errorf("ref of %s: %w", base, err)
	}
	key, minIoU, failOnDuplicates := job.Params.Match()
	if key == nil {
		key = []string{}
	}
	if err := g.q.CreateIncoming(ctx, target); err != nil {
		return fmt.Errorf("incoming table: %w", err)
	}
	if err := g.q.CreateVersion(ctx); err != nil {
		return fmt.Errorf("version table: %w", err)
	}
	sp, err := newVersionSpool()
	if err != nil {
		return err
	}
	defer sp.Close()
	hashes, err := s.serverHashesAgree(ctx, g.q)
	if err != nil {
		return err
	}
	// The features kept by their bytes: listed in the version, and
	// skipped by the reader (prefilter.go).
	pre, err := s.prefilter(ctx, g, job, pf, oldRef, key, hashes)
	if err != nil {
		return err
	}
	g.pre = pre
	rows, spool := s.prepareRows(ctx, g, job, r) // quarantine.go
	defer spool.close()
	if err := copyVersion(ctx, g.tx, sp, oldRef, key, g.typed, hashes, rows); err != nil {
		return err
	}
	if pre != nil {
		if err := s.checkLayers(pre, job, r); err != nil {
			return err
		}
		if rows.Switched() {
			// Not expected: every layer was in EPSG:4326 at the first read.
			s.prefilterOff.Store(true)
			return errPrefilterDisagrees
		}
	}
	if rows.Switched() {
		// A feature in another CRS: it and the rest are staged and
		// transformed to 4326 by PostGIS, into geoingest_incoming, and
		// hashed there.
		if g.tally != nil {
			g.tally.GiveUp("features transformed by the server")
		}
		if err := g.q.CreateStaging(ctx); err != nil {
			return err
		}
		if _, err := copyRows(ctx, g.tx, pgx.Identifier{"geoingest_staging"}, staged, nil, rows); err != nil {
			return err
		}
		if _, err := g.q.InsertStagedIncoming(ctx, db.InsertStagedIncomingParams{JobRef: oldRef, TargetTable: target, Mapped: g.typed != nil}); err != nil {
			return normaliseErr(err)
		}
		if _, err := g.q.VersionAddStaged(ctx); err != nil {
			return normaliseErr(err)
		}
	}
	// The rows the server measures, checks or repairs, checked as a full
	// load checks them. The count and area are a full load's; the
	// checksum is set when the version is applied (or held), from the rows
	// it then has.
	var fin db.FinishIncomingRow
	if sp.must > 0 || rows.Switched() {
		if _, err := sendSpooled(ctx, g, sp, "must"); err != nil {
			return err
		}
		if fin, err = g.q.FinishIncoming(ctx, db.FinishIncomingParams{Repair: job.Params.Invalid == ingest.PolicyRepair,
			Invalid: rows.Invalid, ServerCheck: rows.ServerCheck || rows.Switched(), JobID: job.ID}); err != nil {
			return normaliseErr(err)
		}
		sum, err := g.q.VersionSync(ctx, key)
		if err != nil {
			return normaliseErr(err)
		}
		fin.Written, fin.AreaM2 = sum.Written, sum.AreaM2
		if pre != nil {
			// The kept features left out of the version (prefilter.go).
			fin.Written, fin.AreaM2 = fin.Written+pre.bypassed, fin.AreaM2+pre.bypassedArea
		}
	} else {
		fin.Written, fin.AreaM2 = sp.rows, sp.area
		if pre != nil {
			fin.Written, fin.AreaM2 = fin.Written+pre.kept, fin.AreaM2+pre.area
		}
	}
	fin.FeaturesChecksum = "0"
	if err := s.recordWritten(ctx, g, job, r, rows, spool, db.FinishJobTableRow(fin), res); err != nil {
		return err
	}

	// The guards, before anything is applied (pending.go): a version they
	// hold is kept whole, out of sight, and nothing below happens.
	g.version = sp
	keys := g.keys.Keys()
	if pre != nil {
		if _, ok := rows.Extent(); !ok && g.extent == nil && fin.Repaired == 0 {
			// Every feature kept: their extent is the version's.
			box := pre.extent
			g.extent = &box
		}
		pre.grow(sp, g.extent)
		if keys, err = s.versionKeys(ctx, g, pf, keys); err != nil {
			return err
		}
	}
	if _, err := s.guard(ctx, g, job, keys, res, true); err != nil || g.held {
		return err
	}

	ingest.HookAt(ctx, ingest.HookDuringDiff, ingest.HookWhere{Job: job.ID})
	plan, err := g.q.DiffPlan(ctx, db.DiffPlanParams{TargetTable: target, OldRef: oldRef, KeyFields: key, SkipKept: pre != nil})
	if err != nil {
		return fmt.Errorf("match the version: %w", normaliseErr(err))
	}
	if failOnDuplicates && plan.DuplicateKeys > 0 {
		return duplicateKeysError(key, plan.DuplicateKeys)
	}
	// Where most rows changed, and the job has a table of its own, the new
	// generation is written straight into it, every row from the spool,
	// rather than into the old one's.
	var m db.DiffApplyRow
	newRef := oldRef
	if g.ref > 0 && pre == nil && float64(plan.ToWrite) > s.diffRewriteAbove()*float64(plan.Total) {
		table, err := g.q.CreateJobTable(ctx, db.CreateJobTableParams{TargetTable: target, JobRef: g.ref})
		if err != nil {
			return fmt.Errorf("job table: %w", err)
		}
		g.attach, newRef = target, g.ref
		if _, err := sendRewrite(ctx, g, sp, pgx.Identifier{table.SchemaName, table.TableName}, g.ref); err != nil {
			return err
		}
		ingest.HookAt(ctx, ingest.HookDuringRewrite, ingest.HookWhere{Job: job.ID})
		d, err := g.q.DiffApplyDirect(ctx, db.DiffApplyDirectParams{JobID: job.ID, BaseJobID: base, TargetTable: target,
			OldRef: oldRef, MinIou: minIoU, DuplicateKeys: plan.DuplicateKeys, NewRef: newRef})
		if err != nil {
			return fmt.Errorf("apply the changes: %w", normaliseErr(err))
		}
		m = db.DiffApplyRow(d)
	} else {
		if _, err := sendSpooled(ctx, g, sp, "write"); err != nil {
			return err
		}
		if pre != nil {
			// Kept features the match did not pair unchanged (repeated
			// keys or contents): from their rows.
			if _, err := g.q.PrefilterSend(ctx, db.PrefilterSendParams{TargetTable: target, OldRef: oldRef, EveryOne: false}); err != nil {
				return fmt.Errorf("prefilter: %w", normaliseErr(err))
			}
		}
		if m, err = g.q.DiffApply(ctx, db.DiffApplyParams{JobID: job.ID, BaseJobID: base, TargetTable: target,
			OldRef: oldRef, MinIou: minIoU, DuplicateKeys: plan.DuplicateKeys, NewRef: newRef}); err != nil {
			return fmt.Errorf("apply the changes: %w", normaliseErr(err))
		}
	}
	if res.Changes, err = g.changesOf(ctx, job, base, db.MatchGenerationRow(m)); err != nil {
		return err
	}
	if newRef != oldRef {
		res.Replaced = base
		return g.retireCurrent(ctx, base, "replaced")
	}

	// The storage changes hands: the replaced job a fresh ref with no
	// rows, then this job the replaced one's (jobs.job_ref is unique).
	if err := g.q.SetJobRef(ctx, db.SetJobRefParams{JobID: base, JobRef: newJobRef(false)}); err != nil {
		return fmt.Errorf("hand over %s's rows: %w", base, err)
	}
	if err := g.q.SetJobRef(ctx, db.SetJobRefParams{JobID: job.ID, JobRef: oldRef}); err != nil {
		return fmt.Errorf("take over %s's rows: %w", base, err)
	}
	g.ref = oldRef
	res.Replaced = base
	return g.q.SetJobStatus(ctx, db.SetJobStatusParams{JobID: base, Status: "replaced"})
}

// DefaultDiffRewriteAbove is Store.DiffRewriteAbove's default.
const DefaultDiffRewriteAbove = 0.5

func (s *Store) diffRewriteAbove() float64 {
	if s.DiffRewriteAbove != 0 {
		return s.DiffRewriteAbove
	}
	return DefaultDiffRewriteAbove
}
