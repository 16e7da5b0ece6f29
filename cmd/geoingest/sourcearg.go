package main

import (
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/ingest"
)

// sourceArg splits a command's SOURCE argument into the bucket and key
// that jobs record: a URL as the tables print a source (s3://, gs://,
// azblob://, file://; ingest.ParseSourcePrefix), or else a local path,
// absolute or relative to the working directory, named as `ingest PATH`
// names it (bucket file, the cleaned absolute path; localfs.Source). The
// bucket is "" for an argument that names neither.
func sourceArg(arg string) (bucket, key string) {
	if arg == "" || strings.Contains(arg, "://") {
		return ingest.ParseSourcePrefix(arg)
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", arg
	}
	return ingest.LocalBucket, filepath.Clean(abs)
}

// sourceArgUsage is what a SOURCE argument may be, for a usage error.
const sourceArgUsage = "want s3://BUCKET/KEY, gs://BUCKET/KEY, azblob://CONTAINER/KEY, file:///PATH or a local PATH"
