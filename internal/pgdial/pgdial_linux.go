package pgdial

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setTCPUserTimeout sets TCP_USER_TIMEOUT (milliseconds) on the socket c.
func setTCPUserTimeout(c syscall.RawConn, ms int) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
	}); err != nil {
		return err
	}
	return serr
}
