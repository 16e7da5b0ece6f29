package postgis

import (
	"context"

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

// HashUpgradeJobs lists the current generations' job ids.
func (s *Store) HashUpgradeJobs(ctx context.Context) ([]string, error) {
	return s.q.HashUpgradeJobs(ctx)
}

// UpgradeHashes is one batch (geoingest_upgrade_match_hashes).
func (s *Store) UpgradeHashes(ctx context.Context, job, cursor string, n int) (ingest.HashBatch, error) {
	r, err := s.q.UpgradeMatchHashes(ctx, db.UpgradeMatchHashesParams{JobID: job, After: cursor, N: int32(n)})
	if err != nil {
		return ingest.HashBatch{}, err
	}
	return ingest.HashBatch{Rewritten: r.Rewritten, Next: r.Next, Busy: r.Busy}, nil
}

// HashesOld reports whether a current job holds a row whose match hashes
// are of a form before migration 0044.
func (s *Store) HashesOld(ctx context.Context, job string) (bool, error) {
	return s.q.HashesOld(ctx, job)
}
