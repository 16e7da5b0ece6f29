//go:build cgo

package geodesic

/*
#cgo LDFLAGS: -lproj -lm
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <proj.h>
#include <geodesic.h>

// geoingest_wgs84 is the geodesic of EPSG:4326's ellipsoid, initialised as
// PostGIS initialises it: semi-major and semi-minor axes from
// proj_ellipsoid_get_parameters, flattening (a - b) / a (spheroid_init).
static struct geod_geodesic geoingest_wgs84;

// geoingest_ellipsoid puts in *a and *b the axes of the ellipsoid of the
// CRS that PROJ builds from def. It returns 0 if PROJ cannot.
static int geoingest_ellipsoid(const char *def, double *a, double *b) {
	PJ_CONTEXT *ctx = proj_context_create();
	if (ctx == NULL) return 0;
	PJ *crs = proj_create(ctx, def);
	if (crs == NULL) { proj_context_destroy(ctx); return 0; }
	PJ *ellps = proj_get_ellipsoid(ctx, crs);
	int ok = ellps != NULL && proj_ellipsoid_get_parameters(ctx, ellps, a, b, NULL, NULL);
	if (ellps != NULL) proj_destroy(ellps);
	proj_destroy(crs);
	proj_context_destroy(ctx);
	return ok && *a > 0 && *b > 0;
}

// geoingest_wgs84_def is WGS 84 as PROJ's built-in ellipsoid table defines
// it: building it reads no database. EPSG:4326 would open proj.db, and
// PROJ keeps that open for the life of the process with its SQLite page
// cache (some 3 MB), which a job that needs no CRS lookup should not pay.
// TestEllipsoidIsEPSG4326s checks that the two give the same axes, bit for
// bit.
static const char *geoingest_wgs84_def = "+proj=longlat +ellps=WGS84 +type=crs";

static int geoingest_init(double *a_out, double *f_out) {
	double a = 0, b = 0;
	if (!geoingest_ellipsoid(geoingest_wgs84_def, &a, &b)) return 0;
	double f = (a - b) / a;
	geod_init(&geoingest_wgs84, a, f);
	*a_out = a;
	*f_out = f;
	return 1;
}

// geoingest_ring_area is liblwgeom's ptarray_area_spheroid: 0 for fewer
// than 4 points, else |area| of the ring without its closing point. xy
// holds npoints (x, y) pairs with the given stride.
static double geoingest_ring_area(const double *xy, long npoints, long stride) {
	if (npoints < 4) return 0.0;
	struct geod_polygon poly;
	double area = 0;
	geod_polygon_init(&poly, 0);
	for (long i = 0; i < npoints - 1; i++)
		geod_polygon_addpoint(&geoingest_wgs84, &poly, xy[i * stride + 1], xy[i * stride]);
	geod_polygon_compute(&geoingest_wgs84, &poly, 0, 1, &area, NULL);
	return fabs(area);
}

// geoingest_unit is the point on the unit sphere of (lon, lat) degrees.
static void geoingest_unit(double lon, double lat, double p[3]) {
	double lam = lon * M_PI / 180.0, phi = lat * M_PI / 180.0;
	p[0] = cos(phi) * cos(lam);
	p[1] = cos(phi) * sin(lam);
	p[2] = sin(phi);
}

// geoingest_near_antipodal_edge reports whether a ring has an edge whose
// ends are antipodal, or within 1e-9 of it. PostGIS refuses such an edge
// when it casts to geography ("Antipodal (180 degrees long) edge
// detected!", a tolerance of 1e-12 on the same unit vectors); the caller
// leaves those geometries to the server, which decides as it always has.
static int geoingest_near_antipodal_edge(const double *flat, const int64_t *ends,
                                         const int64_t *nrings, long npolys, long stride) {
	long r = 0, start = 0;
	for (long p = 0; p < npolys; p++) {
		for (long k = 0; k < nrings[p]; k++, r++) {
			double a[3], b[3];
			for (long i = start; i + 2 * stride - 1 < ends[r]; i += stride) {
				// Antipodal points have opposite latitudes: at more than
				// 0.1 degree from that, the unit vectors' z components
				// differ by more than 1e-7 (at the poles, where that
				// difference is smallest).
				if (fabs(flat[i + 1] + flat[i + stride + 1]) > 0.1) continue;
				geoingest_unit(flat[i], flat[i + 1], a);
				geoingest_unit(flat[i + stride], flat[i + stride + 1], b);
				if (fabs(a[0] + b[0]) <= 1e-9 && fabs(a[1] + b[1]) <= 1e-9 && fabs(a[2] + b[2]) <= 1e-9) return 1;
			}
			start = ends[r];
		}
	}
	return 0;
}

// geoingest_multipolygon_area is lwgeom_area_spheroid of a multipolygon:
// flat holds the coordinates; ends the end offset (in doubles) of each
// ring, polygon after polygon; nrings the number of rings of each of the
// npolys polygons.
static double geoingest_multipolygon_area(const double *flat, const int64_t *ends,
                                          const int64_t *nrings, long npolys, long stride) {
	if (geoingest_near_antipodal_edge(flat, ends, nrings, npolys, stride)) return NAN;
	double area = 0.0;
	long r = 0, start = 0;
	for (long p = 0; p < npolys; p++) {
		double parea = 0.0;
		for (long k = 0; k < nrings[p]; k++, r++) {
			double a = geoingest_ring_area(flat + start, (ends[r] - start) / stride, stride);
			if (k == 0) parea += a; else parea -= a;
			start = ends[r];
		}
		area += parea;
	}
	return area;
}
*/
import "C"

import (
	"math"
	"sync"
	"unsafe"

	"github.com/twpayne/go-geom"
)

var initOnce = sync.OnceValues(func() (ok bool, af [2]float64) {
	var a, f C.double
	ok = C.geoingest_init(&a, &f) == 1
	return ok, [2]float64{float64(a), float64(f)}
})

// Available reports whether Area can compute: this build has cgo and
// PROJ knows WGS 84.
func Available() bool {
	ok, _ := initOnce()
	return ok
}

// epsgAxes returns the axes of the ellipsoid of the CRS PROJ builds from
// def (such as "EPSG:4326", read from proj.db), for the tests.
func epsgAxes(def string) (a, b float64, ok bool) {
	cs := C.CString(def)
	defer C.free(unsafe.Pointer(cs))
	var ca, cb C.double
	ok = C.geoingest_ellipsoid(cs, &ca, &cb) == 1
	return float64(ca), float64(cb), ok
}

// Ellipsoid returns the semi-major axis and flattening Area uses.
func Ellipsoid() (a, f float64) {
	_, af := initOnce()
	return af[0], af[1]
}

// Scratch holds the buffers Area reuses between calls; one per goroutine.
type Scratch struct {
	ends, nrings []int64
}

var authalicOnce = sync.OnceValue(func() authalic { return newAuthalic(Ellipsoid()) })

// Area returns the area in square metres of mp (longitude/latitude
// degrees, EPSG:4326) as ST_Area(mp::geography) computes it, to within
// RelTolerance and AbsTolerance, and true; or false when it is not
// computed here: no PROJ (see Available), a coordinate outside the ranges
// (see InRange), or an edge between two (nearly) antipodal points, which
// PostGIS refuses to measure. A polygon within LocalMaxSpan is measured
// by the local method (local.go), any other with GeographicLib, as
// PostGIS measures it. s may be nil.
func Area(mp *geom.MultiPolygon, s *Scratch) (float64, bool) {
	if !Available() {
		return 0, false
	}
	// The local method's envelope lies within the ranges, so only the
	// polygons it leaves need InRange's second pass over the coordinates.
	m := authalicOnce()
	if a, ok := m.localArea(mp); ok {
		return a, true
	}
	if !InRange(mp) {
		return 0, false
	}
	return geographicLibArea(mp, s)
}

// geographicLibArea is Area by GeographicLib's polygon area, PostGIS's
// own computation: the same double, bit for bit.
func geographicLibArea(mp *geom.MultiPolygon, s *Scratch) (float64, bool) {
	if s == nil {
		s = &Scratch{}
	}
	s.ends, s.nrings = s.ends[:0], s.nrings[:0]
	for _, ends := range mp.Endss() {
		s.nrings = append(s.nrings, int64(len(ends)))
		for _, e := range ends {
			s.ends = append(s.ends, int64(e))
		}
	}
	flat := mp.FlatCoords()
	if len(s.nrings) == 0 || len(flat) == 0 {
		return 0, true
	}
	var ends *C.int64_t
	if len(s.ends) > 0 {
		ends = (*C.int64_t)(unsafe.Pointer(&s.ends[0]))
	}
	a := C.geoingest_multipolygon_area((*C.double)(unsafe.Pointer(&flat[0])), ends,
		(*C.int64_t)(unsafe.Pointer(&s.nrings[0])), C.long(len(s.nrings)), C.long(mp.Stride()))
	if math.IsNaN(float64(a)) {
		return 0, false
	}
	return float64(a), true
}
