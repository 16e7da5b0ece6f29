// Package chaos is geoingest's chaos suite (issue #10). Its test,
// TestChaos, runs the production path: versitygw as the S3 server, its
// bucket notifications captured through a webhook and delivered 1-3 times
// each, in shuffled order, to fauxqs as the SQS queue; a real PostGIS (the
// pgtest private cluster); and several `geoingest serve` processes, the
// built binary with short leases and visibility timeouts. While they work
// it SIGKILLs a random serve every few seconds and restarts it, restarts
// PostgreSQL once, forces stolen leases, and faults S3 and SQS through a
// fault proxy in front of each (internal/testsupport/faultproxy: 500s, 503 SlowDown,
// resets, truncated and stalled downloads, latency, failed acks and
// visibility changes, and an outage of each server). When everything has drained it
// checks, from the database, the DLQ and `geoingest verify`, that every
// key's newest version is current with exactly the features that were
// uploaded, that nothing was written twice and that only the objects meant
// to fail were dead-lettered.
//
// TestChaosClouds runs the same plan on Google Cloud's (Pub/Sub,
// fake-gcs-server) and Azure's (Storage Queue, Azurite with the Event Grid
// stand-in) emulators, with kills, redeliveries and queue and download
// faults, and the same checks.
//
// The default run takes about a minute and is part of `go test ./...`.
// The long run is documented in docs/chaos.md (scripts/chaos.sh).
package chaos
