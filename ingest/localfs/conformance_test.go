package localfs_test

import (
	"testing"

	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/localfs"
)

// TestFileSourceConformance runs the FileSource suite against the local
// file system.
func TestFileSourceConformance(t *testing.T) {
	ingesttest.FileSourceSuite(t, localfs.Files{})
}
