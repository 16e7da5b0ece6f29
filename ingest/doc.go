// Package ingest is geoingest's domain: how an uploaded file becomes rows
// in PostGIS exactly once in effect. It imports neither pgx nor the AWS
// SDK: the database and the object stores are behind its seams.
//
// A bucket event passes the trigger gate (Router: routes, sidecars, test
// events and removals) and becomes a Job: one version of one source (a
// Source, its version token and order) processed with one set of Params,
// named by its job key (JobKey). The Service runs a job through the claim
// gate (Store.Claim: one worker at a time, a committed job never again),
// fetches its input (a Fetcher, before any transaction), and passes it to
// the write gate (Store.Write: one transaction, the ledger row the
// exactly-once guarantee). The Consumer is where a queue message becomes
// jobs and the message's fate (ack, nack with backoff, back after a held
// lease, dead-letter) is decided from the jobs' results; Backfill and
// Replay run jobs from listings and from the ledger. Errors are
// classified (KindOf): Transient ones are retried, Permanent ones
// recorded and dead-lettered.
//
// The domain reaches the outside through three seams with written
// contracts and conformance suites (ingest/ingesttest): Store (the
// database, one interface per role: Claims, WriteGate, CRSRegistry,
// Reports, Ledger; ingest/postgis), ObjectSource (what queue messages
// name: bucket events, ingest/s3, or the inbox, ingest/localfs) and
// FileSource (local files; ingest/localfs). Between reading a file and
// the write gate, ingest/prepare prepares the features.
package ingest
