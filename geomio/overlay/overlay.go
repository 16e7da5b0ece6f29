// Package overlay is the part of GEOS (libgeos_c, the library PostGIS
// links) that the client needs to compute what PostGIS's ST_Covers,
// ST_Intersects, ST_PointOnSurface, ST_Intersection, ST_Difference and
// ST_Union compute, on geometries read from (E)WKB: the same library on
// the same doubles, so the same answers.
//
// A Context is one goroutine's: its geometries and prepared geometries
// must be used and freed only through it. Every geometry is freed by its
// Free; a Context's Close frees its handle, not the geometries.
package overlay

import "errors"

// ErrUnavailable is returned by every operation in a build without cgo,
// and by a Context whose GEOS handle could not be made.
var ErrUnavailable = errors.New("overlay: GEOS is not available in this build")

// ErrGEOS is returned when GEOS could not compute an operation (it
// raised an exception, for instance on an invalid input).
var ErrGEOS = errors.New("overlay: GEOS could not compute the operation")
