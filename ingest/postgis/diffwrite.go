package postgis

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/internal/testhook"
	"github.com/jackc/pgx/v5"
)

// A new version of a source that has a current generation writes only
// what changed (migration 0026, docs/design.md "Versions as changes").
// Inside the write gate, under the source's row lock, so against the
// generation that is current now (a diff can never be stale):
//
//  1. the version is copied into a temporary table (geoingest_incoming),
//     its rows already under the current generation's job_ref, then
//     checked, repaired and summarised there as a full load would be: the
//     ledger's count, area and checksum are the full load's;
//  2. it is matched with the current generation's rows, the changes are
//     recorded, and in the current generation's storage the removed and
//     changed rows are deleted and the added and changed rows inserted;
//     unchanged rows are not touched;
//  3. the job takes over the replaced job's job_ref, and the replaced job
//     gets a fresh one with no rows: the new generation's rows are then
//     found by the new job's ref, as every reader, verify, replay and the
//     compactor find a generation's rows.
//
// One transaction: a reader sees the old generation or the new one, never
// a mix; a kill at any point rolls everything back.

// writeDiff is Write's body for a source with a current generation.
func (s *Store) writeDiff(ctx context.Context, g *gate, job ingest.Job, r ingest.LayerReader, res *ingest.WriteResult) error {
	target := job.Params.Target
	base := g.src.CurrentJobID.String
	oldRef, err := g.q.JobRefOf(ctx, base)
	if err != nil {
		return fmt.Errorf("ref of %s: %w", base, err)
	}
	if err := g.q.CreateIncoming(ctx, target); err != nil {
		return fmt.Errorf("incoming table: %w", err)
	}
	rows, spool := s.prepareRows(ctx, g, job, r) // quarantine.go
	defer spool.close()
	if _, err := copyRows(ctx, g.tx, pgx.Identifier{"pg_temp", "geoingest_incoming"}, false, oldRef, rows); err != nil {
		return err
	}
	if rows.Switched() {
		if g.tally != nil {
			g.tally.GiveUp("features transformed by the server")
		}
		if err := g.q.CreateStaging(ctx); err != nil {
			return err
		}
		if _, err := copyRows(ctx, g.tx, pgx.Identifier{"geoingest_staging"}, true, 0, rows); err != nil {
			return err
		}
		if _, err := g.q.InsertStagedIncoming(ctx, oldRef); err != nil {
			return normaliseErr(err)
		}
	}
	fin, err := g.q.FinishIncoming(ctx, db.FinishIncomingParams{Repair: job.Params.Invalid == ingest.PolicyRepair,
		Invalid: rows.Invalid, ServerCheck: rows.ServerCheck || rows.Switched(), JobID: job.ID})
	if err != nil {
		return normaliseErr(err)
	}
	if err := s.recordWritten(ctx, g, job, r, rows, spool, db.FinishJobTableRow(fin), res); err != nil {
		return err
	}

	// The guards, before anything is applied (pending.go): a version they
	// hold is kept whole, out of sight, and nothing below happens.
	if _, err := s.guard(ctx, g, job, g.keys.Keys(), res, true); err != nil || g.held {
		return err
	}

	testhook.At(ctx, testhook.DuringDiff, testhook.Where{Job: job.ID})
	key, minIoU, failOnDuplicates := job.Params.Match()
	if key == nil {
		key = []string{}
	}
	m, err := g.q.ApplyIncoming(ctx, db.ApplyIncomingParams{TargetTable: target, JobID: job.ID, BaseJobID: base,
		OldRef: oldRef, KeyFields: key, MinIou: minIoU})
	if err != nil {
		return fmt.Errorf("apply the changes: %w", normaliseErr(err))
	}
	if failOnDuplicates && m.DuplicateKeys > 0 {
		return duplicateKeysError(key, m.DuplicateKeys)
	}
	if res.Changes, err = g.changesOf(ctx, job, base, db.MatchGenerationRow(m)); err != nil {
		return err
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
