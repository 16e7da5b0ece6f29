package azblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/blobset"
)

// Objects is the ingest.ObjectSource of a Blob Storage account's client.
type Objects struct {
	Client *azblob.Client
	// DownloadTimeout is each download's idle timeout; zero for none.
	DownloadTimeout time.Duration
}

// Events implements ingest.ObjectSource: ParseEvents.
func (o Objects) Events(body []byte) ([]ingest.Event, error) { return ParseEvents(body) }

// Resolve implements ingest.ObjectSource: the version token is the
// event's versionId, else its ETag.
func (o Objects) Resolve(ctx context.Context, ev ingest.Event, final bool) (ingest.Source, ingest.Fetcher, error) {
	return blobset.Resolve(ctx, store{o.Client.ServiceClient().NewContainerClient(ev.Bucket), ev.Bucket}, ev, ev.VersionToken(),
		blobset.Options{Final: final, IdleTimeout: o.DownloadTimeout})
}

// store is a blobset.Store on one container.
type store struct {
	c    *container.Client
	name string
}

func (s store) URL(key string) string { return "azblob://" + s.name + "/" + key }

// etag reports whether token is an ETag (0x…) rather than a versionId (a time).
func etag(token string) bool { return strings.HasPrefix(token, "0x") || strings.HasPrefix(token, `"`) }

// Stat returns the current version's versionId, else its ETag.
func (s store) Stat(ctx context.Context, key string) (string, error) {
	p, err := s.c.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return "", classify(err, "stat %s", s.URL(key))
	}
	if p.VersionID != nil && *p.VersionID != "" {
		return *p.VersionID, nil
	}
	if p.ETag == nil {
		return "", ingest.Transientf("stat %s: no ETag", s.URL(key))
	}
	return strings.Trim(string(*p.ETag), `"`), nil
}

// Open reads the version token names: a versionId is read by version, an
// ETag with If-Match, and a 412 means the blob changed since the event
// (ingest.ErrObjectChanged).
func (s store) Open(ctx context.Context, key, token string) (io.ReadCloser, int64, error) {
	b := s.c.NewBlobClient(key)
	opts := &blob.DownloadStreamOptions{}
	if etag(token) {
		e := azcore.ETag(`"` + strings.Trim(token, `"`) + `"`)
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &e}}
	} else {
		var err error
		if b, err = b.WithVersionID(token); err != nil {
			return nil, 0, ingest.Permanentf("%s: version %q: %w", s.URL(key), token, err)
		}
	}
	resp, err := b.DownloadStream(ctx, opts)
	if err != nil {
		if bloberror.HasCode(err, bloberror.ConditionNotMet) || status(err) == http.StatusPreconditionFailed {
			return nil, 0, fmt.Errorf("%w (If-Match ETag %s: 412): this version is superseded", ingest.ErrObjectChanged, token)
		}
		return nil, 0, classify(err, "get %s", s.URL(key))
	}
	if etag(token) && resp.ETag != nil && strings.Trim(string(*resp.ETag), `"`) != strings.Trim(token, `"`) {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("%w (ETag %s, the event says %s): this version is superseded", ingest.ErrObjectChanged, *resp.ETag, token)
	}
	size := int64(-1)
	if resp.ContentLength != nil {
		size = *resp.ContentLength
	}
	return resp.Body, size, nil
}

func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// classify wraps a Blob Storage error: no such blob, version or container
// wraps blobset.ErrNotFound; 400 and 412 are Permanent; everything else
// (5xx, 503 throttling, 403 while permissions are being fixed, the
// network) is Transient.
func classify(err error, format string, args ...any) error {
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) || status(err) == http.StatusNotFound {
		return fmt.Errorf("%w: %w", blobset.ErrNotFound, wrapped)
	}
	switch status(err) {
	case http.StatusBadRequest, http.StatusPreconditionFailed:
		return &ingest.Error{Kind: ingest.Permanent, Err: wrapped}
	}
	return &ingest.Error{Kind: ingest.Transient, Err: wrapped}
}

// List calls fn for the current version of every blob under prefix in
// containerName, as a created event ordered by its last-modified time,
// with the token live events carry (versionId, else ETag).
func List(ctx context.Context, client *azblob.Client, containerName, prefix string, fn func(ingest.BackfillObject) error) error {
	p := client.NewListBlobsFlatPager(containerName, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return ingest.Transientf("list azblob://%s/%s: %w", containerName, prefix, err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil || it.Properties == nil || (it.Deleted != nil && *it.Deleted) {
				continue
			}
			ev := ingest.Event{Name: "ObjectCreated:PutBlob", Bucket: containerName, Key: *it.Name, RawKey: escape(*it.Name),
				Store: ingest.StoreAzure}
			if it.Properties.ContentLength != nil {
				ev.Size = *it.Properties.ContentLength
			}
			if it.Properties.ETag != nil {
				ev.ETag = strings.Trim(string(*it.Properties.ETag), `"`)
			}
			if it.VersionID != nil {
				ev.VersionID = *it.VersionID
			}
			if it.Properties.LastModified != nil {
				ev.Time = *it.Properties.LastModified
			}
			if err := fn(ingest.BackfillObject{Event: ev}); err != nil {
				return err
			}
		}
	}
	return nil
}
