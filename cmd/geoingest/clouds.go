package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/storage"
	"github.com/geoingest/geoingest/ingest"
	ingestgcs "github.com/geoingest/geoingest/ingest/gcs"
	pubsubqueue "github.com/geoingest/geoingest/queue/pubsub"
)

// The wiring of the clouds other than AWS: a --queue-url of pubsub://
// (Cloud Storage notifications through Pub/Sub) or azqueue:// (Blob
// Storage events through Event Grid into a Storage Queue) picks the
// receiver and the object source; a backfill's gs:// or azblob:// bucket
// the lister.

// cloudQueue reports whether url names a queue of another cloud than AWS.
func cloudQueue(url string) bool {
	return strings.HasPrefix(url, "pubsub://") || strings.HasPrefix(url, "azqueue://")
}

// cloudServe sets cons's receiver and object source for a pubsub:// or
// azqueue:// queue, after the start-up checks (the subscription or queue,
// the dead-letter topic or queue, and each route's bucket exist). It
// returns a function that releases the clients.
func cloudServe(ctx context.Context, m *Main, cons *ingest.Consumer, c *serveConfig, routes []ingest.Route, downloadTimeout time.Duration) (func(), error) {
	if strings.HasPrefix(c.queueURL, "azqueue://") {
		return azureServe(ctx, m, cons, c, routes, downloadTimeout)
	}
	project, sub, err := pubsubqueue.ParseURL(c.queueURL)
	if err != nil || !strings.Contains(sub, "/subscriptions/") {
		return nil, fmt.Errorf("--queue-url: want pubsub://projects/PROJECT/subscriptions/SUBSCRIPTION: %v", err)
	}
	var dlq string
	if c.dlqURL != "" {
		_, dlq, err = pubsubqueue.ParseURL(c.dlqURL)
		if err != nil || !strings.Contains(dlq, "/topics/") {
			return nil, fmt.Errorf("--dlq-url: want pubsub://projects/PROJECT/topics/TOPIC: %v", err)
		}
	}
	// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the
	// gcloud user's, the metadata server's), or the emulators named by
	// PUBSUB_EMULATOR_HOST and STORAGE_EMULATOR_HOST.
	pc, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("pubsub client (Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login): %w", err)
	}
	sc, err := storage.NewClient(ctx)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("storage client (Application Default Credentials): %w", err)
	}
	closeAll := func() { pc.Close(); sc.Close() }
	checks := []startCheck{{what: "--queue-url " + c.queueURL, run: func(ctx context.Context) (string, error) {
		err := pubsubqueue.Check(ctx, pc, sub, dlq)
		if errors.Is(err, pubsubqueue.ErrNotFound) {
			return "", fatal(fmt.Errorf("the subscription or dead-letter topic does not exist: check --queue-url and --dlq-url: %w", err))
		}
		return "", err
	}}}
	for _, b := range routeBuckets(routes) {
		checks = append(checks, startCheck{what: "bucket gs://" + b, run: func(ctx context.Context) (string, error) {
			_, err := sc.Bucket(b).Attrs(ctx)
			if errors.Is(err, storage.ErrBucketNotExist) {
				return "", fatal(fmt.Errorf("bucket gs://%s: the bucket does not exist: check --route (env GEOINGEST_ROUTES)", b))
			}
			return "", err
		}})
	}
	if err := runStartChecks(ctx, m.Log, c.startTimeout, checks); err != nil {
		closeAll()
		return nil, fmt.Errorf("start-up: %w", err)
	}
	cons.Objects = ingestgcs.Objects{Client: sc, DownloadTimeout: downloadTimeout}
	cons.Receiver = pubsubqueue.New(pc, sub, pubsubqueue.Options{Wait: c.wait, Visibility: c.visibility, DeadLetterTopic: dlq})
	cons.Visibility = min(c.visibility, 600*time.Second)
	return closeAll, nil
}

// routeBuckets are the buckets the routes name, once each.
func routeBuckets(routes []ingest.Route) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range routes {
		if r.Bucket != "" && !seen[r.Bucket] {
			seen[r.Bucket] = true
			out = append(out, r.Bucket)
		}
	}
	return out
}

// cloudBackfill returns the object source and the lister of a backfill of
// gs://BUCKET (or azblob://ACCOUNT/CONTAINER), and the bucket name the jobs
// carry; ok is false for any other --bucket.
func cloudBackfill(ctx context.Context, getenv func(string) string, bucket, prefix string) (objects ingest.ObjectSource, list func(context.Context, func(ingest.BackfillObject) error) error, name string, closeFn func(), ok bool, err error) {
	switch {
	case strings.HasPrefix(bucket, "gs://"):
		name = strings.TrimSuffix(strings.TrimPrefix(bucket, "gs://"), "/")
		sc, err := storage.NewClient(ctx)
		if err != nil {
			return nil, nil, "", nil, true, fmt.Errorf("storage client (Application Default Credentials): %w", err)
		}
		return ingestgcs.Objects{Client: sc}, func(ctx context.Context, fn func(ingest.BackfillObject) error) error {
			return ingestgcs.List(ctx, sc, name, prefix, fn)
		}, name, func() { sc.Close() }, true, nil
	case strings.HasPrefix(bucket, "azblob://"):
		return azureBackfill(ctx, getenv, bucket, prefix)
	}
	return nil, nil, "", nil, false, nil
}
