package postgis

import (
	"context"
	"errors"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgconn"
)

// verifyPending checks the pending generations (pending.go): each one's
// own table, never attached, holds the rows its ledger row counts, and it
// is not its source's current generation. Readers never see them, so
// they count in no other check.
func (c *Console) verifyPending(ctx context.Context, v *ingest.Verification) error {
	ps, err := c.q.PendingJobs(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil // a schema before migration 0027: no guards, nothing pending
	}
	if err != nil {
		return ingest.Transientf("verify pending: %w", err)
	}
	v.Pending = int64(len(ps))
	for _, p := range ps {
		if p.CurrentJobID == p.JobID {
			v.Add(p.JobID, "pending generation", "pending, yet its source's current generation")
		}
		r, err := c.q.PendingRows(ctx, db.PendingRowsParams{TargetTable: p.TargetTable, JobRef: p.JobRef})
		if err != nil {
			return ingest.Transientf("verify pending %s: %w", p.JobID, err)
		}
		switch {
		case r.N < 0:
			v.Add(p.JobID, "pending generation", fmt.Sprintf("its table (ref %d) is missing: it can be rejected, not approved", p.JobRef))
		case r.N != p.FeatureCount:
			v.Add(p.JobID, "pending generation", fmt.Sprintf("%d rows held, the ledger counts %d", r.N, p.FeatureCount))
		}
	}
	return nil
}

// verifyQuarantine checks the quarantine (quarantine.go) against the
// ledger: each job written since migration 0030 holds in the quarantine
// the number of features its ledger row records as quarantined, which is
// the number its policies left out (skipped_null + skipped_type +
// skipped_cast), so that
// the features landed plus quarantined are the file's.
func (c *Console) verifyQuarantine(ctx context.Context, v *ingest.Verification) error {
	n, err := c.q.VerifyQuarantineTotal(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil // a schema before migration 0030
	}
	if err != nil {
		return ingest.Transientf("verify quarantine: %w", err)
	}
	v.Quarantined = n
	rows, err := c.q.VerifyQuarantine(ctx)
	if err != nil {
		return ingest.Transientf("verify quarantine: %w", err)
	}
	for _, r := range rows {
		v.Add(r.JobID, "quarantine", fmt.Sprintf("the ledger records %d features quarantined and %d left out by the policies; the quarantine holds %d",
			r.Ledger, r.Skipped, r.Held))
	}
	return nil
}
