// Package geodesic computes the area of longitude/latitude polygons on the
// WGS 84 spheroid exactly as PostGIS's ST_Area(geom::geography) does:
// with GeographicLib's geodesic polygon area (PROJ's geodesic.h, the C port
// PostGIS's liblwgeom calls), the ellipsoid's parameters as PROJ gives
// them for EPSG:4326, the closing point of each ring left out, the
// absolute value of each ring's area, a polygon's area its outer ring's
// minus its holes', a multipolygon's the sum of its polygons' in order.
// The same library, the same inputs and the same operations give the same
// double, bit for bit, as the database computes.
package geodesic

import "github.com/twpayne/go-geom"

// InRange reports whether every coordinate of mp is a longitude in
// [-180, 180] and a latitude in [-90, 90]. PostGIS's cast to geography
// moves a coordinate outside those ranges before it measures; Area does
// not reproduce that, so its caller leaves such a geometry to the server.
func InRange(mp *geom.MultiPolygon) bool {
	c := mp.FlatCoords()
	stride := mp.Stride()
	for i := 0; i+1 < len(c); i += stride {
		if !(c[i] >= -180 && c[i] <= 180 && c[i+1] >= -90 && c[i+1] <= 90) {
			return false
		}
	}
	return true
}
