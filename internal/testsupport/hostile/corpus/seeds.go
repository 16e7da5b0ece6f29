package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Seeds writes the hostile corpus's cases (those that need no GDAL
// tool to be made) and adds each file whose name ends in one of exts as
// a seed.
func Seeds(f *testing.F, exts ...string) {
	f.Helper()
	env := Env{Addr: "127.0.0.1:9", Outside: filepath.Join(f.TempDir(), "outside")}
	_ = os.MkdirAll(env.Outside, 0o755)
	for _, c := range Cases() {
		dir := filepath.Join(f.TempDir(), c.Name)
		_ = os.MkdirAll(dir, 0o755)
		if _, err := c.Write(dir, env); err != nil {
			continue // made with GDAL's tools, which this machine lacks
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			for _, ext := range exts {
				if strings.HasSuffix(e.Name(), ext) {
					if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(b) < 1<<20 {
						f.Add(b)
					}
				}
			}
		}
	}
}
