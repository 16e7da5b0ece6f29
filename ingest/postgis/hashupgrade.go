package postgis

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// The match hashes' upgrade (migration 0046,
// geoingest_upgrade_match_hashes): the rows stored before 0044 keep MD5
// match hashes, and the rows of a source whose geometry the server
// transforms store none; the server recomputes both at every later
// version. The maintainer rewrites them, a batch of rows at a time, each
// batch a transaction that takes the source's row lock without waiting.

var _ ingest.HashUpgrader = (*Store)(nil)

// HashUpgradeJobs lists the current generations; a generation's key is
// its target and job_ref, which its rows keep when a version changes
// them in place.
func (s *Store) HashUpgradeJobs(ctx context.Context) ([]ingest.HashUpgradeJob, error) {
	rows, err := s.q.HashUpgradeJobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ingest.HashUpgradeJob, len(rows))
	for i, r := range rows {
		out[i] = ingest.HashUpgradeJob{JobID: r.JobID, Key: fmt.Sprintf("%s/%d", r.TargetTable, r.JobRef)}
	}
	return out, nil
}

// UpgradeHashes is one batch (geoingest_upgrade_match_hashes).
func (s *Store) UpgradeHashes(ctx context.Context, job, cursor string, n int) (ingest.HashBatch, error) {
	r, err := s.q.UpgradeMatchHashes(ctx, db.UpgradeMatchHashesParams{JobID: job, After: cursor, N: int32(n)})
	if err != nil {
		return ingest.HashBatch{}, err
	}
	return ingest.HashBatch{Rewritten: r.Rewritten, Next: r.Next, Busy: r.Busy}, nil
}
