package localfs

import (
	"context"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/dirwalk"
)

// List calls fn for every regular file under dir, in lexical order,
// as a created event of bucket ingest.LocalBucket whose key is the path relative
// to dir (what routes match, as for the inbox). Hidden files and
// directories (".name") are skipped.
func List(ctx context.Context, dir string, fn func(ingest.BackfillObject) error) error {
	return dirwalk.Walk(ctx, dir, false, func(f dirwalk.File) error {
		return fn(ingest.BackfillObject{Path: f.Path, Event: ingest.Event{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket,
			Key: f.Rel, RawKey: f.Rel, Size: f.Info.Size(), Time: f.Info.ModTime()}})
	})
}
