//go:build cgo

package geodesic

import "testing"

// TestEllipsoidIsEPSG4326s: Area's ellipsoid, from PROJ's built-in WGS 84,
// has the axes PROJ's database gives EPSG:4326 (which PostGIS uses for
// geography), bit for bit, and the flattening PostGIS derives from them.
func TestEllipsoidIsEPSG4326s(t *testing.T) {
	if !Available() {
		t.Fatal("geodesic: PROJ cannot build WGS 84")
	}
	a, b, ok := epsgAxes("EPSG:4326")
	if !ok {
		t.Fatal("PROJ cannot read EPSG:4326 from its database")
	}
	ga, gf := Ellipsoid()
	if ga != a || gf != (a-b)/a {
		t.Fatalf("Area's ellipsoid a=%v f=%v; EPSG:4326's a=%v b=%v, f=%v", ga, gf, a, b, (a-b)/a)
	}
	if _, _, ok := epsgAxes("+proj=nosuch"); ok {
		t.Fatal("epsgAxes accepted a definition PROJ cannot build")
	}
}
