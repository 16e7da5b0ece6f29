package main

import (
	"os"
	"os/exec"
	"testing"
)

// requireGDALTool skips the test when GDAL's command-line tool (ogr2ogr,
// ogrinfo: gdal-bin, a test-only dependency, the oracle or the client of
// the test) is missing, except in CI (CI=true), where its absence is a
// failure: scripts/setup.sh --test installs it.
func requireGDALTool(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: scripts/setup.sh --test installs gdal-bin", tool)
		}
		t.Skipf("%s not found: install GDAL (Debian: apt-get install gdal-bin, or scripts/setup.sh --test) to run this test", tool)
	}
}
