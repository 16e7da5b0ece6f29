package ingest

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestDomainImports holds the domain to its seams: package ingest imports
// neither pgx nor a cloud SDK, and no package under ingest/ imports test
// support (internal/test*): the fault points are the domain's own
// (hook.go), set only by tests and cmd/geoingest. Test files are not
// counted; they may import what they need.
func TestDomainImports(t *testing.T) {
	const module = "github.com/geoingest/geoingest/"
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		pkg, err := build.ImportDir(dir, 0)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		}
		if err != nil {
			return err
		}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module+"internal/test") {
				t.Errorf("%s imports %s", dir, imp)
			}
			if dir == "." && (strings.HasPrefix(imp, "github.com/jackc/pgx") ||
				strings.HasPrefix(imp, "github.com/aws/") ||
				strings.HasPrefix(imp, "cloud.google.com/") ||
				strings.HasPrefix(imp, "github.com/Azure/")) {
				t.Errorf("the domain imports %s", imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
