// Package geomiotest holds the test helpers that geomio's packages share
// (its root and the per-format packages), so that each does not keep a
// copy. Only tests import it.
package geomiotest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CPUTime is the CPU (user + system) this process has used so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// AddCorpusFiles adds every file under dir matching glob, up to 200 KiB,
// to f's seed corpus.
func AddCorpusFiles(f *testing.F, dir, glob string) {
	matches, _ := filepath.Glob(filepath.Join(dir, glob))
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil && len(b) < 200<<10 {
			f.Add(b)
		}
	}
}

// WriteTemp writes content to a file called name in a temporary folder of
// the test and returns its path.
func WriteTemp(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}
