package geomio

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeomioStandsAlone: no package of geomio's tree imports a package of
// the module outside it (the service's internal/ packages, ingest), so
// that the readers depend on nothing of the service. Test files are not
// counted.
func TestGeomioStandsAlone(t *testing.T) {
	const module = "github.com/geoingest/geoingest/"
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		case d.Name() == "testdata":
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(dir, 0)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		}
		if err != nil {
			return err
		}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"geomio/") {
				t.Errorf("%s imports %s", dir, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
