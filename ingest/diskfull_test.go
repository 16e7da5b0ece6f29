package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/geoingest/geoingest/geomio"
)

// TestDiskFullIsTransient: a full disk is transient whatever wraps it, a
// geomio input error (a zip's extraction) or a Permanent *Error included;
// other write errors keep their kind.
func TestDiskFullIsTransient(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "/work/job/x.geojson", Err: syscall.ENOSPC}
	edquot := &fs.PathError{Op: "write", Path: "/work/job/x.geojson", Err: syscall.EDQUOT}
	for _, err := range []error{
		enospc, edquot,
		&geomio.Error{File: "a.zip/x.geojson", Problem: "extract", Err: enospc},
		Permanentf("copy: %w", enospc),
		fmt.Errorf("download: %w", edquot),
	} {
		if !IsDiskFull(err) || KindOf(err) != Transient {
			t.Errorf("%v: IsDiskFull %v, kind %v; want a transient disk-full", err, IsDiskFull(err), KindOf(err))
		}
	}
	other := &geomio.Error{File: "a.zip/x", Problem: "extract", Err: &fs.PathError{Op: "mkdir", Path: "x", Err: syscall.ENOTDIR}}
	if IsDiskFull(other) || KindOf(other) != Permanent {
		t.Errorf("%v: want a permanent input error", other)
	}
	if IsDiskFull(errors.New("no space left on device")) {
		t.Error("only the errno counts, not a message")
	}
}
