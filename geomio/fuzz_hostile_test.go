package geomio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
)

// FuzzHostileZip reads zips seeded with the hostile corpus's (symlinks,
// ../ names, bombs) under the fuzz limits: never a panic, never more
// than the limits allow.
func FuzzHostileZip(f *testing.F) {
	corpus.Seeds(f, ".zip")
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.zip")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, Options{Limits: fuzzLimits})
	})
}

// FuzzHostileKML reads KML seeded with the corpus's (NetworkLinks,
// external entities, entity expansion).
func FuzzHostileKML(f *testing.F) {
	corpus.Seeds(f, ".kml")
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.kml")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, Options{Limits: fuzzLimits})
	})
}
