package postgis

import (
	"errors"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5/pgconn"
)

// classify makes a PostgreSQL data exception (SQLSTATE class 22) raised
// by a feature a Permanent ingest.Error: it comes from the upload's
// content and fails the same way on every retry. err's message and chain
// are kept; every other error is returned as it is. The write gates
// (Write, Retire, RecordSuperseded) return their errors through it.
func classify(err error) error {
	var pgErr *pgconn.PgError
	var e *ingest.Error
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "22" && !errors.As(err, &e) {
		return &ingest.Error{Kind: ingest.Permanent, Err: err}
	}
	return err
}
