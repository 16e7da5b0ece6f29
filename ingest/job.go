package ingest

import (
	"context"
	"fmt"
	"time"
)

// LocalBucket is the source bucket of jobs made from local files.
const LocalBucket = "file"

// Source identifies one version of an uploaded object.
type Source struct {
	// Bucket is the bucket name, or LocalBucket for a local file.
	Bucket string
	// Key is the object key, already URL-decoded (or the cleaned absolute
	// path of a local file).
	Key string
	// VersionToken changes whenever the bytes change: the S3 versionId,
	// else the ETag without quotes; for a local file the SHA-256 of its
	// bytes. A shapefile uploaded as loose objects has one token covering
	// every part.
	VersionToken string
	// Order orders versions of the same source (see CompareOrder,
	// OrderFromEvent, OrderFromTime). "" is older than any version.
	Order string
	// Store is the URL scheme of the object store when it is not S3
	// (Event.Store): it names the source in messages only, never in the
	// job's key.
	Store string
}

// String names the source as a URL: file:///path for a local file,
// s3://bucket/key (or gs://, azblob:// by Store) otherwise.
func (s Source) String() string {
	if s.Bucket == LocalBucket {
		return "file://" + s.Key
	}
	if s.Store != "" {
		return s.Store + "://" + s.Bucket + "/" + s.Key
	}
	return "s3://" + s.Bucket + "/" + s.Key
}

// Fetched is a job's input, downloaded to a local file.
type Fetched struct {
	// Path is the local file to open with geomio.Open (for a shapefile
	// uploaded as loose parts, the .shp with its sidecars beside it).
	Path string
	// ContentHash is the SHA-256 (hex) of the bytes fetched, recorded in
	// the ledger and compared when the write gate rejects a duplicate.
	ContentHash string
	// Size is the number of bytes fetched, every part of a shapefile set
	// included. The write gate sizes the job's storage by it (a large
	// input gets a partition of its own).
	Size int64
	// Prefilter, set by the Service (never a Fetcher), lets the write gate
	// skip the features whose bytes are a stored row's (Prefilter).
	Prefilter *Prefilter
}

// Fetcher downloads a job's input. Fetch writes into dir, which the caller
// creates and removes. It must not return until the bytes are on local
// disk, and must fail if the object is no longer the version the job names
// (a changed object is a new version, not silent drift). Errors are
// classified as in KindOf; a missing part of a shapefile set is Transient.
type Fetcher interface {
	Fetch(ctx context.Context, dir string) (Fetched, error)
}

// Job is one unit of work: one version of one source, processed with one
// set of parameters.
type Job struct {
	// ID is the job key (see JobKey).
	ID     string
	Source Source
	Params Params
	// Fetch downloads the input; nil for a delete.
	Fetch Fetcher
	// Delete marks a removal event mirrored into the database: the job
	// retires the source's current generation (if the delete is newer)
	// instead of writing features.
	Delete bool
	// Guards decide whether the version may replace the source's current
	// generation (not part of the key).
	Guards Guards
}

// NewJob makes a job and computes its key. Returns a Permanent error if the
// parameters are invalid.
func NewJob(src Source, p Params, f Fetcher) (Job, error) {
	if err := p.Validate(); err != nil {
		return Job{}, err
	}
	canon, err := CanonicalJSON(p.Map())
	if err != nil {
		return Job{}, &Error{Kind: Permanent, Err: err}
	}
	return Job{
		ID:     jobKeyDecoded(src.Bucket, src.Key, src.VersionToken, canon),
		Source: src,
		Params: p,
		Fetch:  f,
	}, nil
}

// NewDeleteJob makes the job that mirrors a removal of src: src's
// VersionToken names the removal (the delete marker's versionId, else
// "delete:" + the event sequencer) and src.Order orders it among the
// object's versions. Its parameters carry action "delete", so its key
// differs from any write of the same version.
func NewDeleteJob(src Source, p Params) (Job, error) {
	if err := p.Validate(); err != nil {
		return Job{}, err
	}
	job := Job{Source: src, Params: p, Delete: true}
	canon, err := CanonicalJSON(job.ParamsMap())
	if err != nil {
		return Job{}, &Error{Kind: Permanent, Err: err}
	}
	job.ID = jobKeyDecoded(src.Bucket, src.Key, src.VersionToken, canon)
	return job, nil
}

// ParamsMap is the job's parameters as they go into its key and the
// ledger: Params.Map, plus action "delete" for a delete job.
func (j Job) ParamsMap() map[string]any {
	m := j.Params.Map()
	if j.Delete {
		m["action"] = "delete"
	}
	return m
}

// Outcome is what happened to one delivery of a job.
type Outcome string

const (
	// Written: this delivery wrote the job's features.
	Written Outcome = "written"
	// AlreadyPresent: the write gate found the job committed already.
	AlreadyPresent Outcome = "already-present"
	// Held: another worker holds the job's claim under a live lease;
	// nothing was downloaded. The job is not done (that worker may have
	// died): this is not a duplicate. Retry after Result.RetryAfter, when
	// the lease has ended; never ack the message.
	Held Outcome = "held"
	// Superseded: a newer version of the source is current; the job was
	// committed with no features.
	Superseded Outcome = "superseded"
	// Retired: a delete was applied; the source's current generation (if
	// any) was removed.
	Retired Outcome = "retired"
	// Failed: the job failed; Result.Err says why and whether it is
	// permanent.
	Failed Outcome = "failed"
	// Pending: the version tripped a guard (Guards): it was committed as
	// a pending generation, written but not current, until an operator
	// approves or rejects it. Result.Reason says which guards.
	Pending Outcome = "pending"
)

// Duplicate reports whether the outcome is a duplicate of a committed job
// stopped by a gate, which is success: the message is acked. Held is not
// a duplicate.
func (o Outcome) Duplicate() bool { return o == AlreadyPresent }

// Result reports one delivery of a job.
type Result struct {
	JobID    string
	Source   string
	Outcome  Outcome
	Features int64
	AreaM2   float64
	// Replaced is the job whose generation this one replaced, if any.
	Replaced string
	// Changes is the job's change record, when it wrote or retired a
	// generation (nil for a duplicate or a superseded version).
	Changes *Changes
	// Err is set when Outcome is Failed.
	Err error
	// Reason is, for Outcome Pending, the guards the version tripped
	// (and, for a forced version, what they found).
	Reason string
	// Quarantined is the number of the file's features a policy left
	// out, each kept in the quarantine (quarantine.go).
	Quarantined int64
	// For Outcome Held: the worker holding the claim, when its lease
	// ends, and how long to wait before delivering the job again (what is
	// left of the lease plus jitter, at most MaxRetryAfter).
	HeldBy     string
	LeaseUntil time.Time
	RetryAfter time.Duration

	// unreleased: the attempt failed and could not release its claim.
	unreleased bool
}

func (r Result) String() string {
	if r.Outcome == Held {
		return fmt.Sprintf("%s %s: %s", r.JobID, r.Source, r.HeldError())
	}
	if r.Err != nil {
		return fmt.Sprintf("%s %s: %s: %v", r.JobID, r.Source, r.Outcome, r.Err)
	}
	return fmt.Sprintf("%s %s: %s (%d features)", r.JobID, r.Source, r.Outcome, r.Features)
}

// HeldError describes a Held result for a person: the job is in progress
// elsewhere, by whom and until when.
func (r Result) HeldError() string {
	if r.HeldBy == "" || r.LeaseUntil.IsZero() { // released in the moment between two statements
		return "in progress elsewhere a moment ago (the claim was held, then released): try again"
	}
	return fmt.Sprintf("in progress elsewhere: the claim is held by %s until %s (its lease); not done, try again after then",
		r.HeldBy, r.LeaseUntil.UTC().Format(time.RFC3339))
}
