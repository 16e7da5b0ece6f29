package ingest

import "context"

// ObjectSource resolves the objects that bucket events name (S3 and
// compatible stores). It is the seam between the consumer and an object
// store.
type ObjectSource interface {
	// Resolve describes the object version ev names as a job source and
	// returns the Fetcher that downloads exactly that version. The
	// version token is the event's versionId, else its ETag; for a .shp,
	// a token covering every part of the set present (see ShapefileParts),
	// so that a late or changed sidecar makes a new job. A set missing a
	// required sidecar still gets a source, but its Fetch fails with an
	// error wrapping ErrIncompleteShapefile: Transient, or Permanent when
	// final (the caller's patience is exhausted). Resolve returns a
	// Permanent error when ev names no version, a Transient one when a
	// lookup fails for any other reason than absence.
	Resolve(ctx context.Context, ev Event, final bool) (Source, Fetcher, error)
}

// FileSource resolves local files named by path (the inbox). It is the
// seam between the consumer and a file system.
type FileSource interface {
	// Size returns the size in bytes of the file at path, or an error
	// when there is none (it vanished).
	Size(path string) (int64, error)
	// Resolve describes the file at path as a job source: bucket
	// LocalBucket, key its cleaned absolute path, version token the
	// SHA-256 of its bytes (for a .shp, of every part of the set), order
	// its modification time; and returns the Fetcher that copies it and
	// checks it has not changed since. For a .shp missing a required
	// sidecar it returns an error wrapping ErrIncompleteShapefile that
	// names the missing parts: Transient, or Permanent when final.
	Resolve(ctx context.Context, path string, final bool) (Source, Fetcher, error)
}
