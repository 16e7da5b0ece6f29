// Package reportcells computes, in the client, what a parcel job
// contributes to the area reports against one admin generation: the
// cells of migration 0006 (per admin unit, the parcels and area by point
// on surface and by intersection; unit 0 for what is in no unit), by the
// definition geoingest_report_compute (migration 0015) computes them in
// SQL, while the job's features stream to the database.
//
// The write gate's workers already hold every feature's geometry, EWKB
// and area on the spheroid; a Tally gives each of them a Worker that
// adds the feature to the cells as it is prepared. A parcel that lies
// inside a unit (nearly all of them) is settled by a grid of the unit's
// interior cells (grid.go) with no GEOS call; one near a boundary by a
// prepared ST_Covers; the others, as the SQL function does, with GEOS:
// point on surface, the units they meet, the pieces' areas on the
// spheroid, and the area outside every unit. After the commit the
// refresh stores these cells instead of computing them in the database
// (ingest/postgis, RefreshParcelJob), when the admin generation they
// were computed for is still the job's current one.
//
// A Tally that cannot compute a feature exactly as the database would
// (a feature the server will transform, repair or measure itself, a GEOS
// failure) gives up: Cells then returns false, and the refresh computes
// the pair in SQL as before. The cells agree with the SQL function's
// exactly in their counts and, in their areas, to within the tolerance
// of geomio/geodesic per piece (reportcells_test.go in ingest/postgis
// compares them).
package reportcells
