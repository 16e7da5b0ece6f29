// Package postgis is ingest.Store on PostgreSQL with PostGIS, through pgx:
// the claim gate (claims), the write gate (one transaction: the ledger
// row, the features by binary COPY, the source's current generation), the
// CRS lookup and registration, the report assignments, and what the
// commands read from the same tables: area reports, admin checks,
// verification, job and source listings, replay snapshots.
//
// Its SQL is compiled by sqlc into internal/db (private to this package)
// from internal/db/query, against the migrations; the errors it returns
// are classified as ingest.KindOf expects (a data exception a feature
// raised is Permanent). ingest/ingesttest's StoreSuite runs against it
// (conformance_test.go); the tests here drive it through ingest.Service.
package postgis
