// Package reaper stops what a test process started outside itself when
// the test process dies without stopping it: a go test -timeout panic or
// a SIGKILL runs no cleanup, and a PostgreSQL cluster (and a
// pg_auto_failover keeper) is a daemon, reparented to init, that would
// otherwise run, and load the machine, until it is rebooted.
package reaper

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
)

// script waits for the process $REAPER_PID to exit, then sends SIGTERM
// to every process whose command line holds the pattern $REAPER_PATTERN
// (a keeper stops its PostgreSQL on it; a postmaster makes a smart
// shutdown), then, 5 s later, SIGQUIT (PostgreSQL's immediate shutdown),
// then SIGKILL to those left, and removes the directory $REAPER_DIR. They
// are in its environment, not its arguments, so that its own command line
// never matches.
const script = `while kill -0 "$REAPER_PID" 2>/dev/null; do sleep 1; done
pkill -TERM -f -- "$REAPER_PATTERN" 2>/dev/null
sleep 5
pkill -QUIT -f -- "$REAPER_PATTERN" 2>/dev/null
sleep 1
pkill -KILL -f -- "$REAPER_PATTERN" 2>/dev/null
rm -rf -- "$REAPER_DIR"`

// Watch starts a watcher, in a session of its own (so that nothing sent
// to the test's process group reaches it), that waits for this process to
// exit and then stops every process whose command line names dir (the
// cluster's own temporary directory: its postmaster's -D, its keepers'
// --pgdata) and removes dir. stop ends the watch, for a test that stopped
// its processes itself; a watcher that cannot start is no error (the
// test runs as before, unwatched).
func Watch(dir string) (stop func()) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "REAPER_PID="+strconv.Itoa(os.Getpid()),
		"REAPER_PATTERN="+regexp.QuoteMeta(dir)+"(/| |$)", "REAPER_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Kill()
		<-done
	}
}
