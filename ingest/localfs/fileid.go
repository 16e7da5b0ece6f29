package localfs

import (
	"os"
	"time"
)

// fileID is what fstat says of a file that changes whenever its bytes
// do: the device and inode (a file replaced by a rename is another
// inode), the size, and the modification and change times in
// nanoseconds. The change time (ctime) is set by the kernel on every
// write, truncate, chmod or utimes, to the current time, and no
// system call sets it to a value of the caller's choosing: a rewrite
// that keeps the size and puts the modification time back (touch -d)
// still moves it.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// racyWindow: a file whose modification or change time is this close to
// (or after) the moment Source looked at it may still be written in the
// same timestamp tick without its fileID moving (git's "racy index"
// rule). The kernel stamps files from a coarse clock, a tick behind at
// most; two seconds covers that, coarse file systems and small clock
// steps.
const racyWindow = 2 * time.Second

// now is the clock racy times are judged by; tests move it.
var now = time.Now

// statID returns f's fileID, and false where fstat does not give one
// (then the file is hashed again at fetch).
func statID(f *os.File) (fileID, bool, error) {
	st, err := f.Stat()
	if err != nil {
		return fileID{}, false, err
	}
	id, ok := idOf(st)
	return id, ok, nil
}

// settled says whether id, read at or after t0, can vouch for the
// file's bytes later: its times are older than t0 by racyWindow, so any
// later write moves its ctime to a different value.
func (id fileID) settled(t0 time.Time) bool {
	limit := t0.Add(-racyWindow).UnixNano()
	return id.mtime < limit && id.ctime < limit
}
