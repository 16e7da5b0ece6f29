package ingest

import (
	"context"
	"errors"
)

// ErrIncompleteShapefile is wrapped by the error the Fetch of a
// multi-file set (a shapefile, a MapInfo table) returns when a required
// part (a .shx or .dbf; a .dat, .map, .id or .mid) is not in the bucket
// (yet). Its text names no format: the set may be either.
var ErrIncompleteShapefile = errors.New("incomplete file set")

// ErrObjectChanged is wrapped by the error Fetch returns when the object
// an event names is pinned only by its ETag (an unversioned bucket) and
// has changed since the event: S3 answers If-Match with 412
// PreconditionFailed (or a server that ignores If-Match sends another
// ETag). That version can never be read again and a newer one exists,
// whose own event ingests it: Service.Run records the job as superseded
// (committed, no features), not as a failure.
var ErrObjectChanged = errors.New("the object changed since the event")

// ObjectSource is a store of uploaded objects that queue messages name:
// bucket events of S3 and compatible stores (ingest/s3), or the inbox's
// deliveries of local files (localfs.Inbox). It is the consumer's and the
// backfill's seam to an object store; ingest/ingesttest is the
// conformance suite of a bucket's.
type ObjectSource interface {
	// Events decodes a queue message body into the bucket events it
	// carries. It returns a Permanent error for a body it cannot decode:
	// retrying it cannot help.
	Events(body []byte) ([]Event, error)
	// Resolve describes the object version ev names as a job source and
	// returns the Fetcher that downloads exactly that version. The
	// source's Bucket and Key are ev's, its Order ev.Order(); its version
	// token is ev's version (ev.VersionToken()), but for a .shp a token
	// covering every part of the set present (geomio.ShapefileParts), so
	// that a late or changed sidecar makes a new job. A set missing one
	// of geomio.RequiredSidecars fails with an error wrapping
	// ErrIncompleteShapefile: Transient, or Permanent when final (the
	// caller's patience is exhausted); a bucket's set still gets a source
	// and its Fetch fails (ingest/s3), the inbox's fails here, before a
	// job exists (localfs.Inbox). The
	// Fetcher fails with an error wrapping ErrObjectChanged when the
	// object is no longer the version ev names and that version cannot be
	// read any more. Resolve returns a Permanent error when ev names no
	// version, a Transient one when a lookup fails for any other reason
	// than absence.
	Resolve(ctx context.Context, ev Event, final bool) (Source, Fetcher, error)
}

// FileSource is the local file system as a store of uploads (the inbox,
// a local backfill, `geoingest ingest FILE`: ingest/localfs). It is their
// seam to the disk; ingest/ingesttest is its conformance suite.
type FileSource interface {
	// Size returns the size in bytes of the file at path, or an error
	// when there is none (it vanished).
	Size(path string) (int64, error)
	// Missing returns which of geomio.RequiredSidecars are not beside the
	// .shp at path (nil for any other file, or a complete set).
	Missing(path string) []string
	// Source describes the file at path as a job source: bucket
	// LocalBucket, key its cleaned absolute path, version token the
	// SHA-256 of its bytes (for a .shp, of every part of its set present,
	// in geomio.ShapefileParts order), order its modification time
	// (OrderFromTime); and returns the Fetcher that copies the file (or
	// set) into the job's directory, hashing it on the way, and fails
	// with a Transient error if it changed since. A file that cannot be
	// read is a Permanent error.
	Source(path string) (Source, Fetcher, error)
}
