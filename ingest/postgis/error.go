package postgis

import (
	"errors"
	"fmt"

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

// normaliseErr classifies an error from normalising the staged features.
// PostGIS reports every problem with a geometry as SQLSTATE XX000
// (internal_error): a ring PostGIS will not parse, or coordinates outside
// the source CRS's domain ("transform: Point outside of projection
// domain"). Those come from the upload's content and fail the same way on
// every retry, so they are permanent: the job is recorded FAILED with the
// reason, rather than redelivered until it is dead-lettered. Other errors
// (connection lost, out of memory, serialization) keep their
// classification.
func normaliseErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "XX000" {
		return ingest.Permanentf("normalise features: PostGIS cannot use a geometry of this upload: %s", pgErr.Message)
	}
	return fmt.Errorf("normalise features: %w", err)
}
