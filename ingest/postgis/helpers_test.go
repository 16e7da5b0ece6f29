package postgis

import (
	"fmt"
	"math"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/geodesic"
)

// areaOff is the SQL condition of a feature row whose area_m2 is missing
// or is not ST_Area(geom::geography) to within geodesic's tolerance, as
// verify checks it.
var areaOff = fmt.Sprintf(`(area_m2 IS NULL OR abs(area_m2 - ST_Area(geom::geography)) > %g * abs(area_m2) + %g)`,
	geodesic.RelTolerance, geodesic.AbsTolerance)

// areaWithin reports whether a, an area geoingest wrote, is b, an area
// PostGIS computed, to within geodesic's tolerance.
func areaWithin(a, b float64) bool {
	return math.Abs(a-b) <= geodesic.RelTolerance*math.Abs(b)+geodesic.AbsTolerance
}

// areaSumWithin reports whether a, a sum of n areas geoingest wrote, is
// b, the sum of PostGIS's areas of the same rows, to within geodesic's
// tolerance for each.
func areaSumWithin(a, b float64, n int64) bool {
	return math.Abs(a-b) <= geodesic.RelTolerance*math.Abs(b)+geodesic.AbsTolerance*float64(n)
}

func openLocal(path string) (geomio.Reader, error) { return geomio.Open(path, geomio.Options{}) }
