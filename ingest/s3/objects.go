package s3

import (
	"context"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
)

// Objects is the ingest.ObjectSource of an S3 client.
type Objects struct {
	Client *awss3.Client
	// DownloadTimeout is each download's idle timeout (Options.IdleTimeout);
	// zero for none.
	DownloadTimeout time.Duration
}

// Events implements ingest.ObjectSource: ParseEvents.
func (o Objects) Events(body []byte) ([]ingest.Event, error) { return ParseEvents(body) }

// Resolve implements ingest.ObjectSource: NewSource.
func (o Objects) Resolve(ctx context.Context, ev ingest.Event, final bool) (ingest.Source, ingest.Fetcher, error) {
	return NewSource(ctx, o.Client, ev, Options{FinalAttempt: final, IdleTimeout: o.DownloadTimeout})
}
