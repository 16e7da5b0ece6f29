package localfs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/ingest"
)

// Inbox is the inbox directory as an ingest.ObjectSource, so that the
// Consumer handles its deliveries as it handles bucket events. A message
// body is the absolute path of a file under Dir (what queue.Inbox
// delivers); its one event is a created event of bucket
// ingest.LocalBucket whose key is the file's path relative to Dir, with
// slashes (what routes match), and whose size is the file's, or -1 when
// the file is gone (the trigger gate drops it as vanished).
type Inbox struct {
	Dir string
}

var _ ingest.ObjectSource = Inbox{}

// Events decodes an inbox delivery. A body that is not a path under Dir
// is a Permanent error.
func (b Inbox) Events(body []byte) ([]ingest.Event, error) {
	p := string(body)
	rel, err := filepath.Rel(b.Dir, p)
	if err != nil || !filepath.IsAbs(p) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, ingest.Permanentf("inbox message %q: not the path of a file in the inbox %s", p, b.Dir)
	}
	rel = filepath.ToSlash(rel)
	size, err := Files{}.Size(p)
	if err != nil {
		size = -1
	}
	return []ingest.Event{{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket, Key: rel, RawKey: rel, Size: size}}, nil
}

// Resolve is the file ev names as a job source (Files.Source). A .shp
// whose set lacks one of geomio.RequiredSidecars fails here, before a job
// exists, with an error wrapping ErrIncompleteShapefile: Transient (its
// sidecars may be on their way), or Permanent when final.
func (b Inbox) Resolve(ctx context.Context, ev ingest.Event, final bool) (ingest.Source, ingest.Fetcher, error) {
	p := filepath.Join(b.Dir, filepath.FromSlash(ev.Key))
	if missing := (Files{}).Missing(p); len(missing) > 0 {
		err := fmt.Errorf("%w: %s has no %s beside it", ingest.ErrIncompleteShapefile, p, strings.Join(missing, " or "))
		if final {
			return ingest.Source{}, nil, ingest.Permanentf("%w (gave up waiting)", err)
		}
		return ingest.Source{}, nil, &ingest.Error{Kind: ingest.Transient, Err: err}
	}
	return Source(p)
}
