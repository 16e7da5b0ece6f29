//go:build !linux

package pgdial

import "syscall"

// setTCPUserTimeout does nothing where TCP_USER_TIMEOUT is not available:
// the keepalives alone then drop a connection to a vanished host.
func setTCPUserTimeout(syscall.RawConn, int) error { return nil }
