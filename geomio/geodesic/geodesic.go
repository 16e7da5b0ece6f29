// Package geodesic computes the area of longitude/latitude polygons on the
// WGS 84 spheroid as PostGIS's ST_Area(geom::geography) does: the area of
// the polygon whose edges are the spheroid's geodesics, on the ellipsoid
// whose parameters PROJ gives for EPSG:4326, with the closing point of
// each ring left out, the absolute value of each ring's area, a polygon's
// area its outer ring's minus its holes', a multipolygon's the sum of its
// polygons' in order.
//
// Two methods compute it. A polygon larger than LocalMaxSpan is measured
// with GeographicLib's geodesic polygon area (PROJ's geodesic.h, the C
// port PostGIS's liblwgeom calls): the same double, bit for bit, as the
// database computes. A smaller one, which is nearly every parcel, is
// measured by the local method (local.go), about fifteen times faster on
// a parcel-like polygon (BenchmarkPrep/area in ingest/prepare). The two
// agree to within RelTolerance and AbsTolerance; what separates them is
// mostly GeographicLib's own rounding, about 1e-4 m² on any polygon (it sums
// areas measured from the equator), which the local method does not have.
package geodesic

import (
	"github.com/geoingest/geoingest/geomio/lonlat"
	"github.com/twpayne/go-geom"
)

// RelTolerance and AbsTolerance bound the difference between Area and
// ST_Area(geom::geography): |Area - ST_Area| <= RelTolerance * Area +
// AbsTolerance. The relative part is the local method's (below 5e-11
// measured within LocalMaxSpan); the absolute part is GeographicLib's
// rounding (1e-4 m² measured on polygons of ten vertices, 1.2e-3 m² on
// ten thousand). verify checks stored areas against ST_Area with these.
const (
	RelTolerance = 1e-9
	AbsTolerance = 0.01
)

// InRange reports whether every coordinate of mp is a longitude in
// [-180, 180] and a latitude in [-90, 90] (lonlat.Within with no slack),
// and none is NaN. PostGIS's cast to geography moves a coordinate outside
// those ranges before it measures; Area does not reproduce that, so its
// caller leaves such a geometry to the server.
func InRange(mp *geom.MultiPolygon) bool {
	c, stride := mp.FlatCoords(), mp.Stride()
	if !lonlat.Within(c, stride, 0) {
		return false
	}
	for i := 0; i+1 < len(c); i += stride {
		if c[i] != c[i] || c[i+1] != c[i+1] { // NaN
			return false
		}
	}
	return true
}
