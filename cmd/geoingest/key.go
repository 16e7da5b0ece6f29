package main

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "key", summary: "print the job key of an object version", run: runKey})
}

// runKey prints the job key for --bucket, --key (raw, URL-encoded as in an
// S3 event), --version and --params, so that any tool can look a job up in
// the ledger.
func runKey(_ context.Context, m *Main, args []string) error {
	fs := m.flagSet("key", "--bucket B --key RAW_KEY --version TOKEN [--params JSON]")
	bucket := fs.String("bucket", "", "bucket name (\"file\" for local files)")
	key := fs.String("key", "", "object key as it appears in the event (URL-encoded, + for space)")
	version := fs.String("version", "", "version token: versionId, else the ETag without quotes, else the SHA-256 of the bytes")
	params := fs.String("params", "{}", "job parameters as a JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *bucket == "" || *key == "" || *version == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	p, err := ingest.ParseParams([]byte(*params))
	if err != nil {
		return err
	}
	k, err := ingest.JobKey(*bucket, *key, *version, p)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, k)
	return nil
}
