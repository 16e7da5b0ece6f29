//go:build cgo

package crs

/*
#cgo LDFLAGS: -lproj
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <proj.h>
#include <proj_experimental.h>

// geoingest_log keeps PROJ's last error message in app (a buffer of
// GEOINGEST_LOG_SIZE bytes) instead of printing it: some failures (no
// operation between two celestial bodies) say why only in the log.
#define GEOINGEST_LOG_SIZE 512
static void geoingest_log(void *app, int level, const char *msg) {
	if (level != PJ_LOG_ERROR || app == NULL || msg == NULL) return;
	char *buf = (char *)app;
	strncpy(buf, msg, GEOINGEST_LOG_SIZE - 1);
	buf[GEOINGEST_LOG_SIZE - 1] = 0;
}

static void geoingest_set_log(PJ_CONTEXT *ctx, char *buf) {
	buf[0] = 0;
	proj_log_func(ctx, buf, geoingest_log);
	proj_log_level(ctx, PJ_LOG_ERROR);
}

// PROJ opens files that a CRS names: a grid (+nadgrids=, +geoidgrids=,
// a WKT's PARAMETERFILE), an init file (+init=FILE:ID), and resolves a
// relative name against its search paths. An upload's CRS may name any
// path ("+nadgrids=/srv/uploads/other/secret"), and the worker's PROJ is
// not sandboxed; so every file PROJ opens in the worker goes through
// geoingest_fileapi, which opens only files whose real path (symbolic
// links and ".." resolved) lies beneath one of PROJ's own search paths
// (its data directory, PROJ_DATA, the user's PROJ directory), read-only,
// and refuses every other open, write, directory and rename: PROJ then
// reports the grid as missing, and the job fails naming it.
#define GEOINGEST_ROOTS 16
static char geoingest_roots[GEOINGEST_ROOTS][PATH_MAX];
static int geoingest_nroots;

// geoingest_add_root adds a search path (ignored when it does not exist
// or the table is full). Called before any context is confined.
static void geoingest_add_root(const char *dir) {
	if (geoingest_nroots >= GEOINGEST_ROOTS) return;
	if (realpath(dir, geoingest_roots[geoingest_nroots]) != NULL) geoingest_nroots++;
}

static int geoingest_allowed(const char *name) {
	char real[PATH_MAX];
	if (name == NULL || realpath(name, real) == NULL) return 0;
	for (int i = 0; i < geoingest_nroots; i++) {
		size_t n = strlen(geoingest_roots[i]);
		if (strncmp(real, geoingest_roots[i], n) == 0 && (real[n] == '/' || real[n] == 0 || (n == 1 && real[0] == '/'))) return 1;
	}
	return 0;
}

static PROJ_FILE_HANDLE *geoingest_fopen(PJ_CONTEXT *ctx, const char *name, PROJ_OPEN_ACCESS access, void *u) {
	if (access != PROJ_OPEN_ACCESS_READ_ONLY || !geoingest_allowed(name)) return NULL;
	return (PROJ_FILE_HANDLE *)fopen(name, "rb");
}
static size_t geoingest_fread(PJ_CONTEXT *ctx, PROJ_FILE_HANDLE *h, void *buf, size_t n, void *u) {
	return fread(buf, 1, n, (FILE *)h);
}
static size_t geoingest_fwrite(PJ_CONTEXT *ctx, PROJ_FILE_HANDLE *h, const void *buf, size_t n, void *u) { return 0; }
static int geoingest_fseek(PJ_CONTEXT *ctx, PROJ_FILE_HANDLE *h, long long off, int whence, void *u) {
	return fseeko((FILE *)h, (off_t)off, whence) == 0;
}
static unsigned long long geoingest_ftell(PJ_CONTEXT *ctx, PROJ_FILE_HANDLE *h, void *u) {
	return (unsigned long long)ftello((FILE *)h);
}
static void geoingest_fclose(PJ_CONTEXT *ctx, PROJ_FILE_HANDLE *h, void *u) { fclose((FILE *)h); }
static int geoingest_fexists(PJ_CONTEXT *ctx, const char *name, void *u) { return geoingest_allowed(name); }
static int geoingest_fno(PJ_CONTEXT *ctx, const char *name, void *u) { return 0; }
static int geoingest_frename(PJ_CONTEXT *ctx, const char *a, const char *b, void *u) { return 0; }

static const PROJ_FILE_API geoingest_fileapi = {1, geoingest_fopen, geoingest_fread, geoingest_fwrite,
	geoingest_fseek, geoingest_ftell, geoingest_fclose, geoingest_fexists, geoingest_fno, geoingest_fno, geoingest_frename};

static int geoingest_confine(PJ_CONTEXT *ctx) { return proj_context_set_fileapi(ctx, &geoingest_fileapi, NULL); }

// geoingest_wkt_options are proj_as_wkt's options: one line.
static const char *geoingest_wkt_options[] = {"MULTILINE=NO", NULL};

static const char *geoingest_wkt(PJ_CONTEXT *ctx, const PJ *pj, PJ_WKT_TYPE type) {
	return proj_as_wkt(ctx, pj, type, geoingest_wkt_options);
}

// geoingest_from_wkt parses WKT leniently (as GDAL reads .prj files) and
// returns the first error message in *err (NULL if none), which the caller
// must free.
static PJ *geoingest_from_wkt(PJ_CONTEXT *ctx, const char *wkt, char **err) {
	PROJ_STRING_LIST warnings = NULL, errors = NULL;
	const char *opts[] = {"STRICT=NO", NULL};
	PJ *pj = proj_create_from_wkt(ctx, wkt, opts, &warnings, &errors);
	*err = NULL;
	if (errors != NULL && errors[0] != NULL) {
		size_t n = 0;
		while (errors[0][n]) n++;
		*err = malloc(n + 1);
		if (*err) { for (size_t i = 0; i <= n; i++) (*err)[i] = errors[0][i]; }
	}
	proj_string_list_destroy(warnings);
	proj_string_list_destroy(errors);
	return pj;
}

// geoingest_operations lists the operations from src to dst, the area of
// use intersecting partially. With discard, operations needing a grid that
// is not installed are left out, as proj_create_crs_to_crs does; without,
// they are kept (PROJ sorts them after the ones it can use), so that what
// a missing grid would give can be told.
static PJ_OBJ_LIST *geoingest_operations(PJ_CONTEXT *ctx, const PJ *src, const PJ *dst, int discard) {
	PJ_OPERATION_FACTORY_CONTEXT *f = proj_create_operation_factory_context(ctx, NULL);
	if (f == NULL) return NULL;
	proj_operation_factory_context_set_grid_availability_use(ctx, f,
		discard ? PROJ_GRID_AVAILABILITY_DISCARD_OPERATION_IF_MISSING_GRID : PROJ_GRID_AVAILABILITY_USED_FOR_SORTING);
	proj_operation_factory_context_set_spatial_criterion(ctx, f, PROJ_SPATIAL_CRITERION_PARTIAL_INTERSECTION);
	PJ_OBJ_LIST *ops = proj_create_operations(ctx, src, dst, f);
	proj_operation_factory_context_destroy(f);
	return ops;
}

// geoingest_operations_in is geoingest_operations for coordinates within
// the area of interest west, south, east, north (degrees): what PROJ
// prefers there, as proj_trans picks per coordinate among the operations
// of proj_create_crs_to_crs.
static PJ_OBJ_LIST *geoingest_operations_in(PJ_CONTEXT *ctx, const PJ *src, const PJ *dst, int discard,
		double west, double south, double east, double north) {
	PJ_OPERATION_FACTORY_CONTEXT *f = proj_create_operation_factory_context(ctx, NULL);
	if (f == NULL) return NULL;
	proj_operation_factory_context_set_grid_availability_use(ctx, f,
		discard ? PROJ_GRID_AVAILABILITY_DISCARD_OPERATION_IF_MISSING_GRID : PROJ_GRID_AVAILABILITY_USED_FOR_SORTING);
	proj_operation_factory_context_set_spatial_criterion(ctx, f, PROJ_SPATIAL_CRITERION_PARTIAL_INTERSECTION);
	proj_operation_factory_context_set_area_of_interest(ctx, f, west, south, east, north);
	PJ_OBJ_LIST *ops = proj_create_operations(ctx, src, dst, f);
	proj_operation_factory_context_destroy(f);
	return ops;
}

// geoingest_lonlat_bounds transforms the bounds of coordinates in crs
// (easting first) to longitudes and latitudes on its own datum; 0 when
// it cannot.
static int geoingest_lonlat_bounds(PJ_CONTEXT *ctx, const PJ *crs, double xmin, double ymin, double xmax, double ymax,
		double *w, double *s, double *e, double *n) {
	PJ *geod = proj_crs_get_geodetic_crs(ctx, crs);
	if (geod == NULL) return 0;
	PJ *geodn = proj_normalize_for_visualization(ctx, geod);
	proj_destroy(geod);
	if (geodn == NULL) return 0;
	PJ *t = proj_create_crs_to_crs_from_pj(ctx, crs, geodn, NULL, NULL);
	proj_destroy(geodn);
	if (t == NULL) return 0;
	PJ *tn = proj_normalize_for_visualization(ctx, t);
	proj_destroy(t);
	if (tn == NULL) return 0;
	int ok = proj_trans_bounds(ctx, tn, PJ_FWD, xmin, ymin, xmax, ymax, w, s, e, n, 21);
	proj_destroy(tn);
	return ok;
}

// geoingest_swapped returns crs (a 2D geographic or projected CRS whose
// axes point east and north) with its two axes in the other order, or NULL.
// proj_identify weighs axis order: an EPSG CRS that is northing-first is
// found at a low confidence for the easting-first definition of a .prj.
static PJ *geoingest_swapped(PJ_CONTEXT *ctx, const PJ *crs) {
	PJ_TYPE t = proj_get_type(crs);
	if (t != PJ_TYPE_GEOGRAPHIC_2D_CRS && t != PJ_TYPE_PROJECTED_CRS) return NULL;
	PJ *cs = proj_crs_get_coordinate_system(ctx, crs);
	if (cs == NULL) return NULL;
	const char *d0 = NULL, *d1 = NULL, *unit = NULL;
	double conv = 0;
	PJ *out = NULL;
	if (proj_cs_get_axis_count(ctx, cs) == 2 &&
	    proj_cs_get_axis_info(ctx, cs, 0, NULL, NULL, &d0, &conv, &unit, NULL, NULL) &&
	    proj_cs_get_axis_info(ctx, cs, 1, NULL, NULL, &d1, NULL, NULL, NULL, NULL) && d0 && d1) {
		int en = strcmp(d0, "east") == 0 && strcmp(d1, "north") == 0;
		int ne = strcmp(d0, "north") == 0 && strcmp(d1, "east") == 0;
		if (en || ne) {
			if (t == PJ_TYPE_GEOGRAPHIC_2D_CRS) {
				PJ *datum = proj_crs_get_datum_forced(ctx, crs);
				PJ *ncs = proj_create_ellipsoidal_2D_cs(ctx, en ? PJ_ELLPS2D_LATITUDE_LONGITUDE : PJ_ELLPS2D_LONGITUDE_LATITUDE, unit, conv);
				if (datum && ncs) out = proj_create_geographic_crs_from_datum(ctx, proj_get_name(crs), datum, ncs);
				proj_destroy(datum);
				proj_destroy(ncs);
			} else {
				PJ *base = proj_crs_get_geodetic_crs(ctx, crs);
				PJ *op = proj_crs_get_coordoperation(ctx, crs);
				PJ *ncs = proj_create_cartesian_2D_cs(ctx, en ? PJ_CART2D_NORTHING_EASTING : PJ_CART2D_EASTING_NORTHING, unit, conv);
				if (base && op && ncs) out = proj_create_projected_crs(ctx, proj_get_name(crs), base, op, ncs);
				proj_destroy(base);
				proj_destroy(op);
				proj_destroy(ncs);
			}
		}
	}
	proj_destroy(cs);
	return out;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// projCtx is one PROJ context. A context must not be used by two goroutines
// at once; Resolve makes one per call.
type projCtx struct {
	c *C.PJ_CONTEXT
	// log holds PROJ's last error message (C memory: PROJ keeps the
	// pointer).
	log *C.char
}

// errNoOperation: PROJ has no coordinate operation at all between two
// CRSs, not even a ballpark one.
var errNoOperation = errors.New("it knows no transformation between them, not even a ballpark one")

// errNoDatabase is returned when PROJ cannot open its database: the
// machine lacks proj-data, not the input something.
var errNoDatabase = errors.New("PROJ cannot open its database proj.db: install PROJ's data (Debian: apt-get install proj-data) or set PROJ_DATA to its directory")

func newCtx() (*projCtx, error) {
	c := C.proj_context_create()
	if c == nil {
		return nil, errors.New("proj_context_create failed")
	}
	p := &projCtx{c: c, log: (*C.char)(C.calloc(C.GEOINGEST_LOG_SIZE, 1))}
	C.geoingest_set_log(c, p.log)
	C.proj_context_set_enable_network(c, 0)
	if C.proj_context_get_database_path(c) == nil {
		p.close()
		return nil, errNoDatabase
	}
	rootsOnce.Do(func() { addRoots(c) })
	if C.geoingest_confine(c) == 0 {
		p.close()
		return nil, errors.New("PROJ refused geoingest's file access rules (proj_context_set_fileapi)")
	}
	return p, nil
}

var rootsOnce sync.Once

// addRoots sets the folders the PROJ contexts may open files beneath:
// PROJ's search paths (proj_info: the user's PROJ directory, PROJ_DATA,
// the data directory it was built with) and its database's folder.
func addRoots(c *C.PJ_CONTEXT) {
	var dirs []string
	if sp := C.GoString(C.proj_info().searchpath); sp != "" {
		dirs = append(dirs, strings.Split(sp, ":")...)
	}
	if db := C.proj_context_get_database_path(c); db != nil {
		dirs = append(dirs, filepath.Dir(C.GoString(db)))
	}
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		cd := C.CString(d)
		C.geoingest_add_root(cd)
		C.free(unsafe.Pointer(cd))
	}
}

func (p *projCtx) close() {
	C.proj_context_destroy(p.c)
	C.free(unsafe.Pointer(p.log))
}

// logged returns PROJ's last logged error message since the last call, or
// "".
func (p *projCtx) logged() string {
	s := C.GoString(p.log)
	*p.log = 0
	return s
}

// pj is a PROJ object owned by Go code: destroy it.
type pj struct {
	p *C.PJ
}

func (o pj) destroy() {
	if o.p != nil {
		C.proj_destroy(o.p)
	}
}

func (p *projCtx) lastError() string {
	e := C.proj_context_errno(p.c)
	if e == 0 {
		return "unknown error"
	}
	return C.GoString(C.proj_context_errno_string(p.c, e))
}

// create parses a CRS given as WKT (leniently), a PROJ string, a URN, an
// authority:code pair, or PROJJSON.
func (p *projCtx) create(text string, wkt bool) (pj, error) {
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	if wkt {
		var cerr *C.char
		o := C.geoingest_from_wkt(p.c, cs, &cerr)
		if cerr != nil {
			msg := C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
			if o == nil {
				return pj{}, errors.New(msg)
			}
		}
		if o == nil {
			return pj{}, errors.New(p.lastError())
		}
		return pj{o}, nil
	}
	o := C.proj_create(p.c, cs)
	if o == nil {
		return pj{}, errors.New(p.lastError())
	}
	return pj{o}, nil
}

// epsg returns the CRS EPSG:code from PROJ's database.
func (p *projCtx) epsg(code int) (pj, error) {
	auth := C.CString("EPSG")
	defer C.free(unsafe.Pointer(auth))
	cc := C.CString(fmt.Sprint(code))
	defer C.free(unsafe.Pointer(cc))
	o := C.proj_create_from_database(p.c, auth, cc, C.PJ_CATEGORY_CRS, 0, nil)
	if o == nil {
		return pj{}, fmt.Errorf("EPSG:%d: %s", code, p.lastError())
	}
	return pj{o}, nil
}

func (p *projCtx) typ(o pj) C.PJ_TYPE { return C.proj_get_type(o.p) }

func (p *projCtx) isCRS(o pj) bool { return C.proj_is_crs(o.p) != 0 }

func (p *projCtx) name(o pj) string { return C.GoString(C.proj_get_name(o.p)) }

// id returns the first identifier of o (authority and code), or "", "".
func (p *projCtx) id(o pj) (auth, code string) {
	a := C.proj_get_id_auth_name(o.p, 0)
	c := C.proj_get_id_code(o.p, 0)
	if a == nil || c == nil {
		return "", ""
	}
	return C.GoString(a), C.GoString(c)
}

func (p *projCtx) deprecated(o pj) bool { return C.proj_is_deprecated(o.p) != 0 }

// sourceCRS is the base CRS of a BoundCRS.
func (p *projCtx) sourceCRS(o pj) pj { return pj{C.proj_get_source_crs(p.c, o.p)} }

// subCRS is the i-th component of a CompoundCRS.
func (p *projCtx) subCRS(o pj, i int) pj { return pj{C.proj_crs_get_sub_crs(p.c, o.p, C.int(i))} }

// boundParams returns the parameter values of a BoundCRS's transformation
// to its hub (the TOWGS84 terms).
func (p *projCtx) boundParams(o pj) []float64 {
	op := pj{C.proj_crs_get_coordoperation(p.c, o.p)}
	if op.p == nil {
		return nil
	}
	defer op.destroy()
	n := int(C.proj_coordoperation_get_param_count(p.c, op.p))
	out := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		var v C.double
		if C.proj_coordoperation_get_param(p.c, op.p, C.int(i), nil, nil, nil, &v, nil, nil, nil, nil, nil, nil) != 0 {
			out = append(out, float64(v))
		}
	}
	return out
}

// ellipsoid returns the semi-major axis and inverse flattening of the
// CRS's ellipsoid.
func (p *projCtx) ellipsoid(o pj) (a, invf float64, ok bool) {
	e := pj{C.proj_get_ellipsoid(p.c, o.p)}
	if e.p == nil {
		return 0, 0, false
	}
	defer e.destroy()
	var ca, cb, cf C.double
	var computed C.int
	if C.proj_ellipsoid_get_parameters(p.c, e.p, &ca, &cb, &computed, &cf) == 0 {
		return 0, 0, false
	}
	return float64(ca), float64(cf), true
}

// normalized returns o with its axes in GIS order: easting (longitude)
// first, northing (latitude) second.
func (p *projCtx) normalized(o pj) (pj, error) {
	n := C.proj_normalize_for_visualization(p.c, o.p)
	if n == nil {
		return pj{}, errors.New(p.lastError())
	}
	return pj{n}, nil
}

// equivalent reports whether a and b describe the same CRS for the purpose
// of coordinate operations, axis order of geographic CRSs aside.
func (p *projCtx) equivalent(a, b pj) bool {
	return C.proj_is_equivalent_to_with_ctx(p.c, a.p, b.p, C.PJ_COMP_EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS) != 0
}

// candidate is one result of proj_identify.
type candidate struct {
	crs        pj
	code       int
	confidence int
}

// identify returns the EPSG CRSs PROJ finds for o, best first, with their
// confidence (0-100). The caller destroys each candidate's crs.
func (p *projCtx) identify(o pj) []candidate {
	auth := C.CString("EPSG")
	defer C.free(unsafe.Pointer(auth))
	var conf *C.int
	list := C.proj_identify(p.c, o.p, auth, nil, &conf)
	if list == nil {
		return nil
	}
	defer C.proj_list_destroy(list)
	defer C.proj_int_list_destroy(conf)
	n := int(C.proj_list_get_count(list))
	confs := unsafe.Slice(conf, n)
	out := make([]candidate, 0, n)
	for i := 0; i < n; i++ {
		c := pj{C.proj_list_get(p.c, list, C.int(i))}
		var code int
		if _, s := p.id(c); s != "" {
			fmt.Sscan(s, &code)
		}
		out = append(out, candidate{crs: c, code: code, confidence: int(confs[i])})
	}
	return out
}

// swapped returns o with its east and north axes in the other order, or a
// nil pj when o is not a 2D geographic or projected CRS with such axes.
func (p *projCtx) swapped(o pj) pj { return pj{C.geoingest_swapped(p.c, o.p)} }

// bestOperation returns the name of PROJ's preferred operation from src to
// dst (the first of those proj_create_crs_to_crs considers), and whether
// it is a ballpark transformation.
func (p *projCtx) bestOperation(src, dst pj, a *area) (name string, ballpark bool, accuracy float64, err error) {
	p.logged()
	ops := p.operations(src, dst, true, a)
	if ops != nil {
		defer C.proj_list_destroy(ops)
	}
	if ops == nil || C.proj_list_get_count(ops) == 0 {
		// Not even a ballpark: PROJ says why in its log ("Source and
		// target ellipsoid do not belong to the same celestial body").
		why := p.logged()
		if why == "" && ops == nil {
			why = p.lastError()
		}
		if why != "" {
			why = " (PROJ: " + strings.TrimPrefix(strings.TrimPrefix(why, "proj_create_operations: "), "createOperations() failed with: ") + ")"
		}
		return "", false, -1, fmt.Errorf("%w%s", errNoOperation, why)
	}
	op := pj{C.proj_list_get(p.c, ops, 0)}
	defer op.destroy()
	if C.proj_coordoperation_is_instantiable(p.c, op.p) == 0 {
		return "", false, -1, fmt.Errorf("PROJ cannot compute %q (a projection method it does not implement)", p.name(op))
	}
	return p.name(op), C.proj_coordoperation_has_ballpark_transformation(p.c, op.p) != 0,
		float64(C.proj_coordoperation_get_accuracy(p.c, op.p)), nil
}

// area is an area of interest in degrees; nil means the CRS's own.
type area struct{ west, south, east, north float64 }

// operations lists the operations from src to dst, within a when not
// nil (see geoingest_operations).
func (p *projCtx) operations(src, dst pj, discard bool, a *area) *C.PJ_OBJ_LIST {
	d := C.int(0)
	if discard {
		d = 1
	}
	if a == nil {
		return C.geoingest_operations(p.c, src.p, dst.p, d)
	}
	return C.geoingest_operations_in(p.c, src.p, dst.p, d, C.double(a.west), C.double(a.south), C.double(a.east), C.double(a.north))
}

// lonLatArea is the area in degrees of the bounds of coordinates in o
// (easting first), or nil when PROJ cannot transform them.
func (p *projCtx) lonLatArea(o pj, xmin, ymin, xmax, ymax float64) *area {
	var w, s, e, n C.double
	if C.geoingest_lonlat_bounds(p.c, o.p, C.double(xmin), C.double(ymin), C.double(xmax), C.double(ymax), &w, &s, &e, &n) == 0 {
		return nil
	}
	return &area{float64(w), float64(s), float64(e), float64(n)}
}

// betterOperation returns the first operation from src to dst, in PROJ's
// order, that is not a ballpark, is more accurate than than (any accuracy
// when than < 0), and needs a grid that is not installed, with those
// grids; nil when there is none.
func (p *projCtx) betterOperation(src, dst pj, than float64, a *area) *GridOperation {
	ops := p.operations(src, dst, false, a)
	if ops == nil {
		return nil
	}
	defer C.proj_list_destroy(ops)
	n := int(C.proj_list_get_count(ops))
	for i := 0; i < n; i++ {
		op := pj{C.proj_list_get(p.c, ops, C.int(i))}
		if op.p == nil {
			continue
		}
		acc := float64(C.proj_coordoperation_get_accuracy(p.c, op.p))
		if C.proj_coordoperation_has_ballpark_transformation(p.c, op.p) != 0 || acc < 0 || (than >= 0 && acc >= than) {
			op.destroy()
			continue
		}
		missing := p.missingGrids(op)
		if len(missing) > 0 {
			g := &GridOperation{Name: p.name(op), Accuracy: acc, Grids: missing, DataDir: p.dataDir(), Area: p.areaName(op)}
			op.destroy()
			return g
		}
		op.destroy()
	}
	return nil
}

// areaName is the name of op's area of use, or "".
func (p *projCtx) areaName(op pj) string {
	var w, s, e, n C.double
	var name *C.char
	if C.proj_get_area_of_use(p.c, op.p, &w, &s, &e, &n, &name) == 0 || name == nil {
		return ""
	}
	return C.GoString(name)
}

// missingGrids lists the grids op needs that PROJ cannot find.
func (p *projCtx) missingGrids(op pj) []Grid {
	var out []Grid
	n := int(C.proj_coordoperation_get_grid_used_count(p.c, op.p))
	for i := 0; i < n; i++ {
		var short, full, pkg, url *C.char
		var direct, open, avail C.int
		if C.proj_coordoperation_get_grid_used(p.c, op.p, C.int(i), &short, &full, &pkg, &url, &direct, &open, &avail) == 0 || avail != 0 {
			continue
		}
		out = append(out, Grid{ShortName: C.GoString(short), FullName: C.GoString(full), PackageName: C.GoString(pkg),
			URL: C.GoString(url), DirectDownload: direct != 0, OpenLicense: open != 0})
	}
	return out
}

// dataDir is the directory of PROJ's database, where PROJ finds grids
// too.
func (p *projCtx) dataDir() string {
	db := C.proj_context_get_database_path(p.c)
	if db == nil {
		return ""
	}
	return filepath.Dir(C.GoString(db))
}

// wkt exports o as WKT of the given version ("WKT2_2019" or "WKT1_GDAL")
// on one line, or "" when o cannot be expressed in it.
func (p *projCtx) wkt(o pj, version string) string {
	t := C.PJ_WKT2_2019
	if version == "WKT1_GDAL" {
		t = C.PJ_WKT1_GDAL
	}
	s := C.geoingest_wkt(p.c, o.p, C.PJ_WKT_TYPE(t))
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// projString exports o as a PROJ.4 string, or "" when it cannot be.
func (p *projCtx) projString(o pj) string {
	s := C.proj_as_proj_string(p.c, o.p, C.PJ_PROJ_4, nil)
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// PROJ types the resolver distinguishes.
const (
	typeBound      = C.PJ_TYPE_BOUND_CRS
	typeCompound   = C.PJ_TYPE_COMPOUND_CRS
	typeGeog2D     = C.PJ_TYPE_GEOGRAPHIC_2D_CRS
	typeGeog3D     = C.PJ_TYPE_GEOGRAPHIC_3D_CRS
	typeProjected  = C.PJ_TYPE_PROJECTED_CRS
	typeGeodetic   = C.PJ_TYPE_GEODETIC_CRS
	typeGeocentric = C.PJ_TYPE_GEOCENTRIC_CRS
)

// Version is the PROJ library's version, as "9.1.1".
func Version() string {
	info := C.proj_info()
	return C.GoString(info.version)
}

// datumName is the name of the CRS's datum (or datum ensemble), or "".
func (p *projCtx) datumName(o pj) string {
	d := pj{C.proj_crs_get_datum_forced(p.c, o.p)}
	if d.p == nil {
		// A bound or compound CRS: its base, or its horizontal part.
		var b pj
		switch p.typ(o) {
		case typeBound:
			b = p.sourceCRS(o)
		case typeCompound:
			b = p.subCRS(o, 0)
		}
		if b.p == nil {
			return ""
		}
		defer b.destroy()
		return p.datumName(b)
	}
	defer d.destroy()
	return p.name(d)
}
