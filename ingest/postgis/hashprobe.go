package postgis

import (
	"context"

	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
)

// hashProbeText is the text geoingest_hash_probe() hashes (migration 0044).
const hashProbeText = "geoingest match hash probe: 0123456789"

// serverHashesAgree reports whether the server's match hashes are the
// writer's (prepare.HashBytes is PostgreSQL's hash on a little-endian
// server): asked once per Store, then remembered. Where they differ, the
// writer stores no hash and sends every row for the server to hash
// (matchColumns), so that a stored hash is always the server's.
func (s *Store) serverHashesAgree(ctx context.Context, q *db.Queries) (bool, error) {
	switch s.hashes.Load() {
	case hashesAgree:
		return true, nil
	case hashesDiffer:
		return false, nil
	}
	probe, err := q.HashProbe(ctx)
	if err != nil {
		return false, normaliseErr(err)
	}
	if uint64(probe) == prepare.HashBytes([]byte(hashProbeText)) {
		s.hashes.Store(hashesAgree)
		return true, nil
	}
	s.log.Warn("the server's hash differs from the writer's (a big-endian server?): every row's match hashes are computed by the server")
	s.hashes.Store(hashesDiffer)
	return false, nil
}

// The states of Store.hashes.
const (
	hashesUnknown int32 = iota
	hashesAgree
	hashesDiffer
)
