//go:build cgo && !geoingest_nogdal && linux

package ogr

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitSpare waits until a spare has loaded libgdal and waits for its
// job (its main thread blocked reading fd 3), and returns its pid, 0 if
// none is ready within d.
func waitSpare(tb testing.TB, d time.Duration) int {
	tb.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		spares.mu.Lock()
		var pid int
		if len(spares.idle) > 0 {
			pid = spares.idle[0].cmd.Process.Pid
		}
		spares.mu.Unlock()
		if pid == 0 {
			continue
		}
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		sc, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, pid))
		if strings.Contains(string(maps), "libgdal") && strings.HasPrefix(string(sc), "0 0x3 ") {
			return pid
		}
	}
	return 0
}

// TestSpareReadsOneJob: a spare child, started before any job's folder
// is known, reads the job that takes it under that job's sandbox (a file
// outside the job's folder is refused), reads no second job (each job
// has a child of its own), and a spare killed while it waits is passed
// over.
func TestSpareReadsOneJob(t *testing.T) {
	if err := initGDAL(); err != nil {
		t.Skip(err)
	}
	if landlockABI() == 0 {
		t.Skip("no Landlock in this kernel")
	}
	csv := []byte("id,WKT\n1,\"POLYGON((0 0,1 0,1 1,0 0))\"\n")
	a, b := t.TempDir(), t.TempDir()
	pa, pb := filepath.Join(a, "a.csv"), filepath.Join(b, "b.csv")
	require.NoError(t, os.WriteFile(pa, csv, 0o644))
	require.NoError(t, os.WriteFile(pb, csv, 0o644))
	contain := func(dir string) Contain {
		return Contain{Read: []string{dir}, Deadline: time.Now().Add(time.Minute), Timeout: time.Minute}
	}
	KeepSpares(1)
	defer KeepSpares(0)

	require.NoError(t, readAll(pa, []string{"CSV"}, contain(a)), "a first job starts its own child")
	first := waitSpare(t, 30*time.Second)
	require.NotZero(t, first, "its end starts a spare")
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", first)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Rss:") || strings.HasPrefix(l, "Pss:") || strings.HasPrefix(l, "Anonymous:") {
				t.Logf("an idle spare: %s", strings.Join(strings.Fields(l), " "))
			}
		}
	}

	// The spare takes the next job: b's file inside b's folder.
	ds, err := Open(pb, []string{"CSV"}, nil, contain(b))
	require.NoError(t, err)
	require.Equal(t, first, ds.c.cmd.Process.Pid, "the job took the spare")
	require.True(t, Complete(ds.Protection), ds.Protection)
	ds.Close()

	// The next spare, given a's folder, may not read b's file.
	second := waitSpare(t, 30*time.Second)
	require.NotZero(t, second)
	require.NotEqual(t, first, second, "a child reads one job")
	require.Error(t, readAll(pb, []string{"CSV"}, contain(a)), "a file outside the job's folder")

	// A spare killed while it waits is passed over.
	third := waitSpare(t, 30*time.Second)
	require.NotZero(t, third)
	spares.mu.Lock()
	dead := spares.idle[0]
	spares.mu.Unlock()
	require.NoError(t, syscall.Kill(third, syscall.SIGKILL))
	<-dead.done
	ds, err = Open(pa, []string{"CSV"}, nil, contain(a))
	require.NoError(t, err)
	require.NotEqual(t, third, ds.c.cmd.Process.Pid)
	ds.Close()

	// KeepSpares(0) stops the spare.
	last := waitSpare(t, 30*time.Second)
	require.NotZero(t, last)
	KeepSpares(0)
	require.Eventually(t, func() bool {
		return syscall.Kill(last, 0) != nil
	}, 10*time.Second, 10*time.Millisecond, "the spare is gone")
}
