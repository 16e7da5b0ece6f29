package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A job id is 64 lowercase hex digits (JobKey); the CLI's tables print
// its first 12. Where a command takes a job id, a unique prefix of at
// least MinJobIDPrefix characters stands for it (ResolveJobID).
const (
	JobIDLen       = 64
	MinJobIDPrefix = 8
)

// maxAmbiguous is how many of the ids an ambiguous prefix starts an
// AmbiguousJobError lists.
const maxAmbiguous = 5

// ErrAmbiguousJob is wrapped by an AmbiguousJobError: a job id prefix
// that starts more than one job's id.
var ErrAmbiguousJob = errors.New("ambiguous job id prefix")

// AmbiguousJobError is a job id prefix that starts several jobs' ids:
// the first of them in order (at most a few) and whether there are more.
type AmbiguousJobError struct {
	Prefix  string
	Matches []string
	More    bool
}

func (e *AmbiguousJobError) Error() string {
	more := ""
	if e.More {
		more = ", ..."
	}
	return fmt.Sprintf("job id prefix %s is ambiguous: it starts %s%s (give more of the id)", e.Prefix, strings.Join(e.Matches, ", "), more)
}

func (e *AmbiguousJobError) Unwrap() error { return ErrAmbiguousJob }

// JobIDPrefixes lists job ids by prefix: those of the claims and ledger
// rows that start with prefix, in order, at most limit of them.
// postgis.Console implements it.
type JobIDPrefixes interface {
	JobIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
}

// ResolveJobID returns the job id that id names: id itself when it is a
// full id, not lowercase hex, shorter than MinJobIDPrefix (see
// TooShortJobPrefix), an id some job has, or a prefix no job's id starts
// with (so the caller's own lookup reports the unknown job as it always
// did); else the one job id that id starts. A prefix that starts several
// ids is an *AmbiguousJobError.
func ResolveJobID(ctx context.Context, r JobIDPrefixes, id string) (string, error) {
	if len(id) >= JobIDLen || len(id) < MinJobIDPrefix || !isLowerHex(id) {
		return id, nil
	}
	ids, err := r.JobIDsWithPrefix(ctx, id, maxAmbiguous+1)
	if err != nil {
		return "", fmt.Errorf("job id prefix %s: %w", id, err)
	}
	switch {
	case len(ids) == 0 || slices.Contains(ids, id):
		return id, nil
	case len(ids) == 1:
		return ids[0], nil
	}
	e := &AmbiguousJobError{Prefix: id, Matches: ids, More: len(ids) > maxAmbiguous}
	if e.More {
		e.Matches = ids[:maxAmbiguous]
	}
	return "", e
}

// TooShortJobPrefix tells whether id looks like a job id prefix (lowercase
// hex) but is shorter than MinJobIDPrefix: ResolveJobID takes it as a
// whole id, which no job has, rather than as a prefix.
func TooShortJobPrefix(id string) bool {
	return len(id) < MinJobIDPrefix && isLowerHex(id)
}

func isLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
