//go:build geoingest_testhooks

package testhook

import (
	"os"
	"sync"
	"syscall"
)

var envHook = fromEnv()

// fromEnv reads GEOINGEST_TEST_CRASH_AT and GEOINGEST_TEST_PAUSE_AT.
func fromEnv() func(string) {
	crash, pause := os.Getenv("GEOINGEST_TEST_CRASH_AT"), os.Getenv("GEOINGEST_TEST_PAUSE_AT")
	marker := os.Getenv("GEOINGEST_TEST_MARKER")
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(point string) {
		mu.Lock()
		first := !seen[point]
		seen[point] = true
		mu.Unlock()
		if !first {
			return
		}
		switch point {
		case crash:
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		case pause:
			if marker != "" {
				_ = os.WriteFile(marker, []byte(point+"\n"), 0o644)
			}
			select {}
		}
	}
}
