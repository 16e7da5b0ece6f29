package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// ownPartitionBytes is the serves' own-partition threshold in the suite:
// low enough that the large objects get partitions of their own, so that
// the compactor has generations to fold while the chaos runs.
const ownPartitionBytes = "200000"

// The serves compact in the background, folding every own partition but
// the newest, so that kills and the PostgreSQL restart land in folds too.
var compactArgs = []string{"--compact-every", "1s", "--compact-keep", "1"}

var (
	hooksOnce   sync.Once
	hooksBinary string // geoingest built with the test hooks
	hooksErr    error
)

// hookedBinary builds, once, geoingest with the build tag
// geoingest_testhooks, whose processes stop at a point named in their
// environment (internal/testhook).
func hookedBinary() (string, error) {
	hooksOnce.Do(func() {
		hooksBinary = filepath.Join(filepath.Dir(binary), "geoingest-testhooks")
		out, err := exec.Command("go", "build", "-tags", "geoingest_testhooks", "-ldflags=-s -w", "-o", hooksBinary,
			"github.com/geoingest/geoingest/cmd/geoingest").CombinedOutput()
		if err != nil {
			hooksErr = err
			hooksBinary = string(out)
		}
	})
	return hooksBinary, hooksErr
}

// compactFaults is the compaction fault: every couple of seconds a
// `geoingest compact --keep 0` runs beside the serves' own compactors,
// stopped where a fold has copied a generation into the shared partition,
// re-pointed its ledger row and emptied its partition, before COMMIT, and
// SIGKILLed there. Whatever it had done must vanish: the suite's checks
// after the drain (every key's newest version current with exactly its
// features, verify clean) fail if a fold lost or doubled anything.
// r.foldKills counts the kills that landed mid-fold.
func (r *run) compactFaults(ctx context.Context) {
	bin, err := hookedBinary()
	if err != nil {
		r.compactErr = err
		return
	}
	dir := r.t.TempDir()
	for i := 0; ; i++ {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return
		}
		marker := filepath.Join(dir, "paused-"+strings.Repeat("x", i%3)+time.Now().Format("150405.000"))
		cmd := exec.Command(bin, "compact", "--keep", "0", "--database-url", r.db, "--log-level", "warn")
		cmd.Env = append(os.Environ(), "GEOINGEST_TEST_PAUSE_AT="+ingest.HookBeforeFoldCommit, "GEOINGEST_TEST_MARKER="+marker)
		if err := cmd.Start(); err != nil {
			r.compactErr = err
			return
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case <-exited: // nothing to fold, or another compactor held the lock
				break wait
			case <-deadline:
				_ = cmd.Process.Kill()
				<-exited
				break wait
			case <-time.After(20 * time.Millisecond):
				if _, err := os.Stat(marker); err == nil {
					_ = cmd.Process.Kill()
					<-exited
					r.foldKills.Add(1)
					break wait
				}
			}
		}
	}
}
