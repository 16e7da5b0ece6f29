package ingest

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/geoingest/geoingest/geomio"
)

// Kind classifies an error by what the caller should do next.
type Kind int

const (
	// Transient errors may go away on retry: leave the message for
	// redelivery with backoff.
	Transient Kind = iota
	// Permanent errors will not: record the job as FAILED and dead-letter
	// the message.
	Permanent
	// Precondition errors mean a conditional write (replace --if-match)
	// found the source changed; nothing was written.
	Precondition
)

func (k Kind) String() string {
	switch k {
	case Permanent:
		return "permanent"
	case Precondition:
		return "precondition"
	default:
		return "transient"
	}
}

// Error is an ingest error with a Kind, and the Cause of the failure
// when the code that made it knows one. Read them with KindOf and
// CauseOf.
type Error struct {
	Kind  Kind
	Err   error
	Cause Cause
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Permanentf returns a Permanent error.
func Permanentf(format string, args ...any) error {
	return &Error{Kind: Permanent, Err: fmt.Errorf(format, args...)}
}

// Transientf returns a Transient error.
func Transientf(format string, args ...any) error {
	return &Error{Kind: Transient, Err: fmt.Errorf(format, args...)}
}

// KindOf classifies err. A full disk (IsDiskFull) is Transient whatever
// wraps it: no input is at fault, and it passes when space is freed. An
// *Error reports its own Kind; a geomio input error is Permanent;
// everything else, database unavailability included, is Transient. A
// Store returns the errors its input caused (for PostGIS, a data
// exception raised by a feature) as Permanent *Errors.
func KindOf(err error) Kind {
	if IsDiskFull(err) {
		return Transient
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if geomio.IsInputError(err) {
		return Permanent
	}
	return Transient
}

// IsDiskFull reports whether err is a local file system's being full:
// ENOSPC, or EDQUOT (a quota spent), where a job writes its download or
// extracts an archive (Service.TempDir).
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
