// Package lonlat is the one check that coordinates can be longitudes and
// latitudes, shared by the readers (a GeoJSON file without a crs member),
// the feature preparation (a layer that says EPSG:4326) and the geodesic
// area (which measures only coordinates in the ranges).
package lonlat

// Slack is how far outside [-180,180]x[-90,90] a coordinate may lie and
// still be accepted as longitude/latitude: real files carry rounding noise
// such as 180.0000019.
const Slack = 1e-3

// Within reports whether every position of flat (stride values each, x
// then y first) is a longitude in [-180-slack, 180+slack] and a latitude
// in [-90-slack, 90+slack]. A NaN is not outside the ranges (no comparison
// with it holds): a caller that needs finite coordinates checks them
// itself. It allocates nothing: it runs on every feature.
func Within(flat []float64, stride int, slack float64) bool {
	if stride < 2 {
		return true
	}
	for i := 0; i+1 < len(flat); i += stride {
		x, y := flat[i], flat[i+1]
		if x < -180-slack || x > 180+slack || y < -90-slack || y > 90+slack {
			return false
		}
	}
	return true
}
