package ingest

import (
	"errors"
	"fmt"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
)

// Cause is why a job failed, as a code: set where the error is made
// (Error.Cause, or a geomio error's Code), recorded with the FAILED claim
// (Claims.Fail), and read by the operator's hint (FailureHint), so that
// what an operator is told depends on what failed, not on the words of
// its message. "" is a failure with no known cause: fix the file.
type Cause string

// The causes an operator can act on other than by fixing the file.
const (
	// CauseCRS: the CRS is missing, unreadable, unknown to the database
	// or unusable (coordinates outside longitude/latitude in EPSG:4326,
	// a ballpark transformation): give the source SRID.
	CauseCRS Cause = "crs"
	// CauseInvalidGeometry: the invalid policy is fail and a geometry is
	// invalid.
	CauseInvalidGeometry Cause = "invalid_geometry"
	// CauseNullGeometry: the null-geometry policy is fail and a feature
	// has none.
	CauseNullGeometry Cause = "null_geometry"
	// CauseWrongType: the wrong-type policy is fail and a geometry is not
	// polygonal, or no polygonal feature is left to write.
	CauseWrongType Cause = "wrong_type"
	// CauseIncompleteSet: a required part of a file set never came.
	CauseIncompleteSet Cause = "incomplete_set"
	// CauseEncoding: the text encoding is not the file's.
	CauseEncoding Cause = "encoding"
	// CausePayloadMismatch: the job key is committed with other content.
	CausePayloadMismatch Cause = "payload_mismatch"
)

// PermanentCause returns a Permanent error with cause c.
func PermanentCause(c Cause, format string, args ...any) error {
	return &Error{Kind: Permanent, Cause: c, Err: fmt.Errorf(format, args...)}
}

// CauseOf returns err's cause: the first Cause set on an *Error in its
// chain; else that of a geomio error's code (geomio.CodeEncoding), of a
// CRS that cannot be used (*crs.InputError), or of an incomplete file set
// (ErrIncompleteShapefile); else "".
func CauseOf(err error) Cause {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if x, ok := e.(*Error); ok && x.Cause != "" {
			return x.Cause
		}
	}
	var ge *geomio.Error
	var ce *crs.InputError
	switch {
	case errors.As(err, &ge) && ge.Code == geomio.CodeEncoding:
		return CauseEncoding
	case errors.As(err, &ce):
		return CauseCRS
	case errors.Is(err, ErrIncompleteShapefile):
		return CauseIncompleteSet
	}
	return ""
}
