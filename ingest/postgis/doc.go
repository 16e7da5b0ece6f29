// Package postgis is ingest.Store on PostgreSQL with PostGIS, through pgx,
// every role of it: the claim gate (claims), the write gate (writegate.go:
// one transaction, the ledger row, the features by binary COPY, the
// source's current generation), the CRS registry, the report assignments
// and reports, and the ledger's reads (verification, job and source
// listings, replay snapshots). It holds SQL and COPY only: the features
// come prepared by ingest/prepare (policies, EWKB, area, validity), and
// the package has no cgo.
//
// Its SQL is compiled by sqlc into internal/db (private to this package)
// from internal/db/query, against the migrations; the errors it returns
// are classified as ingest.KindOf expects (a data exception a feature
// raised is Permanent). ingest/ingesttest's role suites (StoreSuite) run against it
// (conformance_test.go); the tests here drive it through ingest.Service.
package postgis
