package main

import (
	"context"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

var errAzureNotYet = errors.New("azqueue:// and azblob:// are not supported yet")

func azureServe(ctx context.Context, m *Main, cons *ingest.Consumer, c *serveConfig, routes []ingest.Route, downloadTimeout time.Duration) (func(), error) {
	return nil, errAzureNotYet
}

func azureBackfill(ctx context.Context, bucket, prefix string) (ingest.ObjectSource, func(context.Context, func(ingest.BackfillObject) error) error, string, func(), bool, error) {
	return nil, nil, "", nil, true, errAzureNotYet
}
