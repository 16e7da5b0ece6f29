// Command geoingest-stack wires the docker-compose stack's S3 server to its
// queue, the way S3 itself sends bucket notifications to SQS:
//
//	geoingest-stack init    create the queue, its dead-letter queue (redrive
//	                        after --max-receives) and the versioned bucket; exit
//	geoingest-stack bridge  receive versitygw's event notifications (its
//	                        --event-webhook-url) and send each to the queue
//	geoingest-stack gcp     the Google Cloud emulators (deploy/compose/gcp.yml)
//	geoingest-stack azgrid  the Event Grid stand-in before Azurite (deploy/compose/azure.yml)
//	geoingest-stack sas     print a container SAS for uploads to the Azure stack
//
// The AWS endpoints, region and credentials come from the AWS environment
// (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3, AWS_REGION, AWS_ACCESS_KEY_ID,
// ...). It is part of the compose stack, not of geoingest: geoingest reads the
// queue exactly as it reads an SQS queue that S3 feeds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: geoingest-stack init|bridge|gcp|azgrid|sas [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch os.Args[1] {
	case "init":
		err = runInit(ctx, log, os.Args[2:])
	case "bridge":
		err = runBridge(ctx, log, os.Args[2:])
	case "gcp":
		err = runGCP(ctx, log, os.Args[2:])
	case "azgrid":
		err = runAzgrid(ctx, log, os.Args[2:])
	case "sas":
		err = runSAS(ctx, log, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (init, bridge, gcp, azgrid or sas)", os.Args[1])
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		log.Error("geoingest-stack "+os.Args[1], "error", err.Error())
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// retry calls f until it succeeds, ctx ends or patience runs out, waiting
// a second between attempts; it returns f's last error.
func retry(ctx context.Context, patience time.Duration, f func() error) error {
	deadline := time.Now().Add(patience)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
