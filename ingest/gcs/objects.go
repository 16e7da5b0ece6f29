package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"cloud.google.com/go/storage"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/blobset"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// Objects is the ingest.ObjectSource of a Cloud Storage client.
type Objects struct {
	Client *storage.Client
	// DownloadTimeout is each download's idle timeout; zero for none.
	DownloadTimeout time.Duration
}

// Events implements ingest.ObjectSource: ParseEvents.
func (o Objects) Events(body []byte) ([]ingest.Event, error) { return ParseEvents(body) }

// Resolve implements ingest.ObjectSource: the version token is the
// event's generation, and every read names that generation (and a
// shapefile's sidecars the generations Stat found), so a later write of
// the same name is never read as this version.
func (o Objects) Resolve(ctx context.Context, ev ingest.Event, final bool) (ingest.Source, ingest.Fetcher, error) {
	return blobset.Resolve(ctx, bucket{o.Client.Bucket(ev.Bucket), ev.Bucket}, ev, ev.VersionID,
		blobset.Options{Final: final, IdleTimeout: o.DownloadTimeout})
}

// bucket is a blobset.Store on one Cloud Storage bucket.
type bucket struct {
	h    *storage.BucketHandle
	name string
}

func (b bucket) URL(key string) string { return "gs://" + b.name + "/" + key }

// Stat returns the live generation of key.
func (b bucket) Stat(ctx context.Context, key string) (string, error) {
	a, err := b.h.Object(key).Attrs(ctx)
	if err != nil {
		return "", classify(err, "stat %s", b.URL(key))
	}
	return strconv.FormatInt(a.Generation, 10), nil
}

// Open reads generation token of key. When that generation is gone (a
// bucket without object versioning keeps only the live one) and the name
// has another live generation, the error wraps ingest.ErrObjectChanged.
func (b bucket) Open(ctx context.Context, key, token string) (io.ReadCloser, int64, error) {
	gen, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return nil, 0, ingest.Permanentf("%s: generation %q is not a number", b.URL(key), token)
	}
	r, err := b.h.Object(key).Generation(gen).NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			if live, serr := b.Stat(ctx, key); serr == nil && live != token {
				return nil, 0, fmt.Errorf("%w (generation %s is no longer readable; the live one is %s): this version is superseded",
					ingest.ErrObjectChanged, token, live)
			}
		}
		return nil, 0, classify(err, "get %s#%s", b.URL(key), token)
	}
	if g := r.Attrs.Generation; g != 0 && g != gen {
		r.Close()
		return nil, 0, ingest.Permanentf("get %s: server returned generation %d, not %d", b.URL(key), g, gen)
	}
	return r, r.Attrs.Size, nil
}

// classify wraps a Cloud Storage error: no such object (or generation)
// wraps blobset.ErrNotFound; 412 and 400 are Permanent; everything else
// (5xx, 429, 403 while permissions are being fixed, the network) is
// Transient.
func classify(err error, format string, args ...any) error {
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%w: %w", blobset.ErrNotFound, wrapped)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", blobset.ErrNotFound, wrapped)
		case http.StatusPreconditionFailed, http.StatusBadRequest:
			return &ingest.Error{Kind: ingest.Permanent, Err: wrapped}
		}
	}
	return &ingest.Error{Kind: ingest.Transient, Err: wrapped}
}

// List calls fn for the live generation of every object under prefix in
// bucket, as a created event (the generation its version token and its
// sequencer, ordered by its update time), so that a backfill's jobs get
// the same keys as live notifications.
func List(ctx context.Context, client *storage.Client, bucketName, prefix string, fn func(ingest.BackfillObject) error) error {
	it := client.Bucket(bucketName).Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return ingest.Transientf("list gs://%s/%s: %w", bucketName, prefix, err)
		}
		if !a.Deleted.IsZero() {
			continue
		}
		if err := fn(ingest.BackfillObject{Event: Created(a)}); err != nil {
			return err
		}
	}
}

// Created is the created event of the object generation a describes.
func Created(a *storage.ObjectAttrs) ingest.Event {
	t := a.Updated
	if t.IsZero() {
		t = a.Created
	}
	return ingest.Event{Name: "ObjectCreated:" + ObjectFinalize, Time: t, Bucket: a.Bucket, Key: a.Name,
		RawKey: escape(a.Name), Size: a.Size, VersionID: strconv.FormatInt(a.Generation, 10),
		Sequencer: fmt.Sprintf("%016X", a.Generation), Store: ingest.StoreGCS}
}
