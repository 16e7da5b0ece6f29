//go:build !cgo

package geodesic

import "github.com/twpayne/go-geom"

// Available is false in a build without cgo: the area needs PROJ.
func Available() bool { return false }

// Ellipsoid returns zeros in a build without cgo.
func Ellipsoid() (a, f float64) { return 0, 0 }

// Scratch holds the buffers Area reuses between calls.
type Scratch struct{}

// Area cannot compute in a build without cgo: it returns false, and the
// caller leaves the area to the server.
func Area(mp *geom.MultiPolygon, s *Scratch) (float64, bool) { return 0, false }
