//go:build cgo

package validity

/*
#cgo LDFLAGS: -lgeos_c
#include <stdlib.h>
#include <geos_c.h>

// geoingest_geos_quiet drops GEOS's notices and errors: a geometry GEOS
// cannot build is reported by the return value, not by a message.
static void geoingest_geos_quiet(const char *fmt, ...) {}

static GEOSContextHandle_t geoingest_geos_init(void) {
	GEOSContextHandle_t h = GEOS_init_r();
	if (h != NULL) {
		GEOSContext_setNoticeHandler_r(h, geoingest_geos_quiet);
		GEOSContext_setErrorHandler_r(h, geoingest_geos_quiet);
	}
	return h;
}

// geoingest_geos_valid returns 1 if the (E)WKB geometry is valid, 0 if it
// is not or GEOS cannot build it, and 2 on an exception in the check.
static int geoingest_geos_valid(GEOSContextHandle_t h, GEOSWKBReader *r, const unsigned char *wkb, size_t n) {
	GEOSGeometry *g = GEOSWKBReader_read_r(h, r, wkb, n);
	if (g == NULL) return 0;
	char v = GEOSisValid_r(h, g);
	GEOSGeom_destroy_r(h, g);
	return v == 1 ? 1 : v == 0 ? 0 : 2;
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Checker decides whether a geometry is valid as PostGIS's
// ST_IsValid does: GEOSisValid (libgeos_c, the library PostGIS links) of
// the geometry GEOS builds from it; a geometry GEOS refuses to build, such
// as a ring of fewer than four points or one that is not closed, is
// invalid, as ST_IsValid reports it. It is what a caller asks when
// Certain cannot prove a geometry valid. It holds a GEOS context of its
// own: one per goroutine. Its C memory is freed by Close or, failing
// that, when it is garbage collected.
type Checker struct {
	h       C.GEOSContextHandle_t
	r       *C.GEOSWKBReader
	cleanup runtime.Cleanup
}

// geosHandles are a checker's C objects, freed by close or, failing that,
// when the checker is garbage collected.
type geosHandles struct {
	h C.GEOSContextHandle_t
	r *C.GEOSWKBReader
}

func (g geosHandles) free() {
	if g.r != nil {
		C.GEOSWKBReader_destroy_r(g.h, g.r)
	}
	C.GEOS_finish_r(g.h)
}

// NewChecker returns a Checker with a GEOS context of its own.
func NewChecker() *Checker {
	v := &Checker{h: C.geoingest_geos_init()}
	if v.h == nil {
		return v
	}
	v.r = C.GEOSWKBReader_create_r(v.h)
	v.cleanup = runtime.AddCleanup(v, geosHandles.free, geosHandles{v.h, v.r})
	return v
}

// Close frees the checker's GEOS context now; it must not be used after.
func (v *Checker) Close() {
	if v.h == nil {
		return
	}
	v.cleanup.Stop()
	geosHandles{v.h, v.r}.free()
	v.h, v.r = nil, nil
}

// Valid returns the verdict for the geometry in (E)WKB, and whether it
// could decide.
func (v *Checker) Valid(wkb []byte) (valid, known bool) {
	if v.h == nil || v.r == nil || len(wkb) == 0 {
		return false, false
	}
	switch C.geoingest_geos_valid(v.h, v.r, (*C.uchar)(unsafe.Pointer(&wkb[0])), C.size_t(len(wkb))) {
	case 1:
		return true, true
	case 0:
		return false, true
	default:
		return false, false
	}
}
