package ingest

import "context"

// The local-file source of this package's internal tests. They cannot
// import ingest/localfs (it imports ingest: an import cycle), so
// localfs_test.go, in package ingest_test, which can, sets them from its
// init, before any test runs.
var (
	testFiles FileSource
	testList  func(ctx context.Context, dir string, fn func(BackfillObject) error) error
)

// SetTestFiles sets the local-file source of the internal tests.
func SetTestFiles(f FileSource, list func(ctx context.Context, dir string, fn func(BackfillObject) error) error) {
	testFiles, testList = f, list
}
