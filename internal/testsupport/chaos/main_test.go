package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
)

// binary is the geoingest binary, built once: the suite runs it as real
// serve processes, as production does.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "geoingest-chaos-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "geoingest")
	// -s -w: no symbol table or DWARF, which no test reads (half the link's CPU).
	out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", binary, "github.com/geoingest/geoingest/cmd/geoingest").CombinedOutput()
	if err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	pgtest.Main(m, testsrv.Stop, func() { os.RemoveAll(dir) })
}
