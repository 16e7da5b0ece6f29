package ingest

import (
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
)

// TestMain stops the private PostGIS cluster that pgtest may start for the
// package's database tests. There is one TestMain per test binary: add
// database tests to this package without adding another.
func TestMain(m *testing.M) { pgtest.Main(m) }
