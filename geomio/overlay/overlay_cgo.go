//go:build cgo

package overlay

/*
#cgo LDFLAGS: -lgeos_c
#include <stdlib.h>
#include <geos_c.h>

static void geoingest_overlay_quiet(const char *fmt, ...) {}

static GEOSContextHandle_t geoingest_overlay_init(void) {
	GEOSContextHandle_t h = GEOS_init_r();
	if (h != NULL) {
		GEOSContext_setNoticeHandler_r(h, geoingest_overlay_quiet);
		GEOSContext_setErrorHandler_r(h, geoingest_overlay_quiet);
	}
	return h;
}

// geoingest_overlay_union is ST_Union of the n geometries (cloned into a
// collection, which owns the clones), or NULL.
static GEOSGeometry *geoingest_overlay_union(GEOSContextHandle_t h, GEOSGeometry **gs, unsigned n) {
	GEOSGeometry **cl = malloc(sizeof(GEOSGeometry *) * (n ? n : 1));
	if (cl == NULL) return NULL;
	for (unsigned i = 0; i < n; i++) {
		cl[i] = GEOSGeom_clone_r(h, gs[i]);
		if (cl[i] == NULL) {
			for (unsigned j = 0; j < i; j++) GEOSGeom_destroy_r(h, cl[j]);
			free(cl);
			return NULL;
		}
	}
	GEOSGeometry *c = GEOSGeom_createCollection_r(h, GEOS_GEOMETRYCOLLECTION, cl, n);
	free(cl);
	if (c == NULL) return NULL;
	GEOSGeometry *u = GEOSUnaryUnion_r(h, c);
	GEOSGeom_destroy_r(h, c);
	return u;
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Context is one goroutine's GEOS handle, WKB reader and writer.
type Context struct {
	h       C.GEOSContextHandle_t
	r       *C.GEOSWKBReader
	w       *C.GEOSWKBWriter
	cleanup runtime.Cleanup
}

type handles struct {
	h C.GEOSContextHandle_t
	r *C.GEOSWKBReader
	w *C.GEOSWKBWriter
}

func (x handles) free() {
	if x.r != nil {
		C.GEOSWKBReader_destroy_r(x.h, x.r)
	}
	if x.w != nil {
		C.GEOSWKBWriter_destroy_r(x.h, x.w)
	}
	C.GEOS_finish_r(x.h)
}

// Geom is a GEOS geometry of one Context.
type Geom struct{ g *C.GEOSGeometry }

// Prepared is a prepared geometry of one Context: repeated predicates
// with it as the first argument build its indexes once.
type Prepared struct{ p *C.GEOSPreparedGeometry }

// New returns a Context; Close frees it.
func New() *Context {
	c := &Context{h: C.geoingest_overlay_init()}
	if c.h == nil {
		return c
	}
	c.r = C.GEOSWKBReader_create_r(c.h)
	c.w = C.GEOSWKBWriter_create_r(c.h)
	C.GEOSWKBWriter_setByteOrder_r(c.h, c.w, C.GEOS_WKB_NDR)
	c.cleanup = runtime.AddCleanup(c, handles.free, handles{c.h, c.r, c.w})
	return c
}

// Close frees the Context's handle; its geometries must be freed before.
func (c *Context) Close() {
	if c.h == nil {
		return
	}
	c.cleanup.Stop()
	handles{c.h, c.r, c.w}.free()
	c.h, c.r, c.w = nil, nil, nil
}

func (c *Context) ok() bool { return c.h != nil && c.r != nil && c.w != nil }

// Read builds the geometry of an (E)WKB.
func (c *Context) Read(wkb []byte) (*Geom, error) {
	if !c.ok() {
		return nil, ErrUnavailable
	}
	if len(wkb) == 0 {
		return nil, ErrGEOS
	}
	g := C.GEOSWKBReader_read_r(c.h, c.r, (*C.uchar)(unsafe.Pointer(&wkb[0])), C.size_t(len(wkb)))
	if g == nil {
		return nil, ErrGEOS
	}
	return &Geom{g}, nil
}

// Free frees g (nil is allowed).
func (c *Context) Free(g *Geom) {
	if g != nil && g.g != nil && c.h != nil {
		C.GEOSGeom_destroy_r(c.h, g.g)
		g.g = nil
	}
}

// Prepare prepares g, which must outlive the result.
func (c *Context) Prepare(g *Geom) (*Prepared, error) {
	if !c.ok() {
		return nil, ErrUnavailable
	}
	p := C.GEOSPrepare_r(c.h, g.g)
	if p == nil {
		return nil, ErrGEOS
	}
	return &Prepared{p}, nil
}

// FreePrepared frees p (nil is allowed), not its geometry.
func (c *Context) FreePrepared(p *Prepared) {
	if p != nil && p.p != nil && c.h != nil {
		C.GEOSPreparedGeom_destroy_r(c.h, p.p)
		p.p = nil
	}
}

func verdict(v C.char) (bool, error) {
	switch v {
	case 1:
		return true, nil
	case 0:
		return false, nil
	default:
		return false, ErrGEOS
	}
}

// Covers is ST_Covers(p, g).
func (c *Context) Covers(p *Prepared, g *Geom) (bool, error) {
	return verdict(C.GEOSPreparedCovers_r(c.h, p.p, g.g))
}

// Intersects is ST_Intersects(p, g).
func (c *Context) Intersects(p *Prepared, g *Geom) (bool, error) {
	return verdict(C.GEOSPreparedIntersects_r(c.h, p.p, g.g))
}

// PointOnSurface is ST_PointOnSurface(g).
func (c *Context) PointOnSurface(g *Geom) (*Geom, error) {
	return c.result(C.GEOSPointOnSurface_r(c.h, g.g))
}

// Intersection is ST_Intersection(a, b).
func (c *Context) Intersection(a, b *Geom) (*Geom, error) {
	return c.result(C.GEOSIntersection_r(c.h, a.g, b.g))
}

// Difference is ST_Difference(a, b).
func (c *Context) Difference(a, b *Geom) (*Geom, error) {
	return c.result(C.GEOSDifference_r(c.h, a.g, b.g))
}

// Union is ST_Union of gs (which stay the caller's).
func (c *Context) Union(gs []*Geom) (*Geom, error) {
	if !c.ok() {
		return nil, ErrUnavailable
	}
	arr := C.malloc(C.size_t(len(gs)+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(arr)
	s := unsafe.Slice((**C.GEOSGeometry)(arr), len(gs)+1)
	for i, g := range gs {
		s[i] = g.g
	}
	return c.result(C.geoingest_overlay_union(c.h, (**C.GEOSGeometry)(arr), C.uint(len(gs))))
}

func (c *Context) result(g *C.GEOSGeometry) (*Geom, error) {
	if g == nil {
		return nil, ErrGEOS
	}
	return &Geom{g}, nil
}

// ClipByRect is ST_ClipByBox2D(g, box): fast, but its result need not be
// valid (see Valid).
func (c *Context) ClipByRect(g *Geom, xmin, ymin, xmax, ymax float64) (*Geom, error) {
	return c.result(C.GEOSClipByRect_r(c.h, g.g, C.double(xmin), C.double(ymin), C.double(xmax), C.double(ymax)))
}

// Valid is ST_IsValid(g) and not ST_IsEmpty(g).
func (c *Context) Valid(g *Geom) (bool, error) {
	v, err := verdict(C.GEOSisValid_r(c.h, g.g))
	if err != nil || !v {
		return false, err
	}
	e, err := verdict(C.GEOSisEmpty_r(c.h, g.g))
	return !e, err
}

// XY is the coordinates of a point.
func (c *Context) XY(g *Geom) (x, y float64, err error) {
	var cx, cy C.double
	if C.GEOSGeomGetX_r(c.h, g.g, &cx) != 1 || C.GEOSGeomGetY_r(c.h, g.g, &cy) != 1 {
		return 0, 0, ErrGEOS
	}
	return float64(cx), float64(cy), nil
}

// AppendWKB appends g's little-endian WKB (2D) to out.
func (c *Context) AppendWKB(out []byte, g *Geom) ([]byte, error) {
	if !c.ok() {
		return out, ErrUnavailable
	}
	var n C.size_t
	b := C.GEOSWKBWriter_write_r(c.h, c.w, g.g, &n)
	if b == nil {
		return out, ErrGEOS
	}
	out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(b)), int(n))...)
	C.GEOSFree_r(c.h, unsafe.Pointer(b))
	return out, nil
}
