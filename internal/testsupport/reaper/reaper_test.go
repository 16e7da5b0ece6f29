package reaper

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestReapsWhatADeadTestLeft: a process (this test binary again, as a
// helper) watches a directory, starts a daemon whose command line names
// it (in a session of its own, as pg_ctl's postmaster is), and is
// SIGKILLed. The daemon is stopped and the directory removed; a daemon
// that names another directory is left alone. Without the watch, both
// would run on.
func TestReapsWhatADeadTestLeft(t *testing.T) {
	if dir := os.Getenv("REAPER_TEST_DIR"); dir != "" {
		Watch(dir)
		for _, d := range []string{dir, os.Getenv("REAPER_TEST_OTHER")} {
			c := exec.Command("/bin/sh", "-c", "while :; do sleep 1; done", "daemon", filepath.Join(d, "pgdata"))
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
		}
		time.Sleep(time.Hour) // killed
		return
	}
	dir, other := t.TempDir(), t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run", "^TestReapsWhatADeadTestLeft$")
	helper.Env = append(os.Environ(), "REAPER_TEST_DIR="+dir, "REAPER_TEST_OTHER="+other)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for len(pids) < 2 && sc.Scan() {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("helper said %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	if len(pids) < 2 {
		t.Fatalf("helper gave %d pids", len(pids))
	}
	t.Cleanup(func() { _ = syscall.Kill(pids[1], syscall.SIGKILL) })
	_ = helper.Process.Kill()
	_ = helper.Wait()
	alive := func(pid int) bool { return syscall.Kill(pid, 0) == nil }
	deadline := time.Now().Add(30 * time.Second)
	for alive(pids[0]) || dirExists(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after its test process died: daemon alive %v, directory there %v", alive(pids[0]), dirExists(dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !alive(pids[1]) || !dirExists(other) {
		t.Fatalf("the daemon of another directory was stopped (alive %v) or its directory removed (%v)", alive(pids[1]), dirExists(other))
	}
}

func dirExists(d string) bool { _, err := os.Stat(d); return err == nil }
