//go:build cgo

// Package crstest gives tests what they need from PROJ to build CRS test
// cases: the EPSG CRSs of PROJ's database with their areas of use, and
// coordinates in a CRS from longitudes and latitudes on its own datum (no
// datum shift). Only tests import it.
package crstest

/*
#cgo LDFLAGS: -lproj
#include <stdlib.h>
#include <math.h>
#include <proj.h>
#include <proj_experimental.h>

// crstest_geog returns the 2D geographic CRS (longitude, latitude in
// degrees) on the geodetic datum of crs, and the longitude of that datum's
// prime meridian in degrees in *pm.
static PJ *crstest_geog(PJ_CONTEXT *ctx, const PJ *crs, double *pm) {
	PJ *geod = proj_crs_get_geodetic_crs(ctx, crs);
	if (geod == NULL) return NULL;
	PJ *datum = proj_crs_get_datum_forced(ctx, geod);
	PJ *prime = proj_get_prime_meridian(ctx, geod);
	PJ *out = NULL;
	double lon = 0, conv = 1;
	if (prime) proj_prime_meridian_get_parameters(ctx, prime, &lon, &conv, NULL);
	*pm = lon * conv * 57.29577951308232;
	PJ *cs = proj_create_ellipsoidal_2D_cs(ctx, PJ_ELLPS2D_LONGITUDE_LATITUDE, "degree", 0.017453292519943295);
	if (datum && cs) out = proj_create_geographic_crs_from_datum(ctx, "geographic", datum, cs);
	proj_destroy(cs);
	proj_destroy(prime);
	proj_destroy(datum);
	proj_destroy(geod);
	return out;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Info is one CRS of PROJ's database.
type Info struct {
	Code       string
	Name       string
	Projected  bool   // else geographic 2D
	Method     string // the projection method of a projected CRS
	Deprecated bool
	// West, South, East, North bound its area of use, in degrees (West >
	// East across the antimeridian).
	West, South, East, North float64
}

// EPSG lists the geographic 2D and projected CRSs of the EPSG authority in
// PROJ's database that have an area of use.
func EPSG() ([]Info, error) {
	ctx := C.proj_context_create()
	defer C.proj_context_destroy(ctx)
	auth := C.CString("EPSG")
	defer C.free(unsafe.Pointer(auth))
	var n C.int
	list := C.proj_get_crs_info_list_from_database(ctx, auth, nil, &n)
	if list == nil {
		return nil, errors.New("proj_get_crs_info_list_from_database failed")
	}
	defer C.proj_crs_info_list_destroy(list)
	var out []Info
	for _, ci := range unsafe.Slice(list, int(n)) {
		if ci.bbox_valid == 0 || (ci._type != C.PJ_TYPE_PROJECTED_CRS && ci._type != C.PJ_TYPE_GEOGRAPHIC_2D_CRS) {
			continue
		}
		in := Info{Code: C.GoString(ci.code), Name: C.GoString(ci.name), Projected: ci._type == C.PJ_TYPE_PROJECTED_CRS,
			Deprecated: ci.deprecated != 0, West: float64(ci.west_lon_degree), South: float64(ci.south_lat_degree),
			East: float64(ci.east_lon_degree), North: float64(ci.north_lat_degree)}
		if ci.projection_method_name != nil {
			in.Method = C.GoString(ci.projection_method_name)
		}
		out = append(out, in)
	}
	return out, nil
}

// Geographic converts between coordinates of a CRS (easting first) and
// longitudes and latitudes in degrees from Greenwich on the CRS's own
// datum, with no datum shift.
type Geographic struct {
	ctx *C.PJ_CONTEXT
	op  *C.PJ
	pm  float64
}

// NewGeographic returns the conversion for the CRS given as text (a
// definition or "EPSG:n"). Close it.
func NewGeographic(text string) (*Geographic, error) {
	ctx := C.proj_context_create()
	C.proj_log_level(ctx, C.PJ_LOG_NONE)
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	crs := C.proj_create(ctx, cs)
	if crs == nil {
		C.proj_context_destroy(ctx)
		return nil, fmt.Errorf("%s: PROJ cannot read it", text)
	}
	defer C.proj_destroy(crs)
	var pm C.double
	geog := C.crstest_geog(ctx, crs, &pm)
	if geog == nil {
		C.proj_context_destroy(ctx)
		return nil, fmt.Errorf("%s: no geodetic datum", text)
	}
	defer C.proj_destroy(geog)
	op := C.proj_create_crs_to_crs_from_pj(ctx, crs, geog, nil, nil)
	if op == nil {
		C.proj_context_destroy(ctx)
		return nil, fmt.Errorf("%s: no conversion from its datum's longitude, latitude", text)
	}
	norm := C.proj_normalize_for_visualization(ctx, op)
	C.proj_destroy(op)
	if norm == nil {
		C.proj_context_destroy(ctx)
		return nil, fmt.Errorf("%s: cannot normalise axis order", text)
	}
	return &Geographic{ctx: ctx, op: norm, pm: float64(pm)}, nil
}

// Forward converts longitude, latitude (degrees from Greenwich) to x, y.
func (g *Geographic) Forward(lon, lat float64) (x, y float64, err error) {
	return g.trans(C.PJ_INV, lon-g.pm, lat)
}

// Inverse converts x, y to longitude, latitude (degrees from Greenwich).
func (g *Geographic) Inverse(x, y float64) (lon, lat float64, err error) {
	lon, lat, err = g.trans(C.PJ_FWD, x, y)
	return lon + g.pm, lat, err
}

func (g *Geographic) trans(dir C.PJ_DIRECTION, a, b float64) (float64, float64, error) {
	C.proj_errno_reset(g.op)
	in := C.proj_coord(C.double(a), C.double(b), 0, 0)
	out := C.proj_trans(g.op, dir, in)
	xy := *(*[4]C.double)(unsafe.Pointer(&out))
	if e := C.proj_errno(g.op); e != 0 {
		C.proj_errno_reset(g.op)
		return 0, 0, fmt.Errorf("transform (%g %g): %s", a, b, C.GoString(C.proj_context_errno_string(g.ctx, e)))
	}
	if math.IsInf(float64(xy[0]), 0) || math.IsInf(float64(xy[1]), 0) || math.IsNaN(float64(xy[0])) {
		return 0, 0, fmt.Errorf("transform (%g %g): no result", a, b)
	}
	return float64(xy[0]), float64(xy[1]), nil
}

// Close frees g.
func (g *Geographic) Close() {
	C.proj_destroy(g.op)
	C.proj_context_destroy(g.ctx)
}
