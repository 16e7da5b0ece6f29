//go:build cgo && !geoingest_nogdal

// Package ogr is geoingest's own binding of GDAL's vector library (OGR),
// through cgo against the system's libgdal (Debian: libgdal-dev to build,
// libgdal32 at run time), which it loads with dlopen when the first file
// is opened. It is deliberately small: open a dataset read-only
// with one of the drivers geoingest accepts, list its layers and geometry
// fields, and stream a layer's features one at a time (OGR_L_GetNextFeature,
// each feature freed before the next is read), giving each geometry as 2D
// ISO WKB in traditional GIS axis order (easting or longitude first) and each
// attribute as a typed value. ogrreader.go makes that a geomio reader.
//
// A Dataset and its Layers are for one goroutine at a time. GDAL's error
// state is per OS thread, so every call that can fail reads it within the
// same C call.
package ogr

/*
#cgo LDFLAGS: -ldl
#cgo CFLAGS: -I/usr/include/gdal
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/geoingest/geoingest/geomio/pagetrim"
)

var (
	initOnce sync.Once
	initErr  error
)

// ErrNoGDAL is (wrapped in) the error of Open when libgdal cannot be
// loaded: the machine lacks it, not the file.
var ErrNoGDAL = errors.New("GDAL's library (Debian: libgdal32) cannot be loaded")

// initGDAL loads libgdal and registers geoingest's drivers, once (in
// the reading child, a fresh process).
//
// Loading is the largest single step in the child's resident memory:
// the dynamic loader maps libgdal and the seventy-odd libraries it
// needs, reads their symbol tables and relocations, and runs their
// initialisers, touching pages of each that nothing uses again. So the
// pages of code and read-only data that the process does not use any
// more are given back (pagetrim) just before loading (what the start of
// the child touched: the executable's and its own libraries' pages) and
// again just after: what GDAL's reading then uses comes back on its
// first use. A failed trim costs memory, not
// correctness, and is ignored.
func initGDAL() error {
	initOnce.Do(func() {
		_, _ = pagetrim.Trim()
		if msg := C.gi_init(); msg != nil {
			initErr = fmt.Errorf("%w: %s", ErrNoGDAL, C.GoString(msg))
		}
		_, _ = pagetrim.Trim()
	})
	return initErr
}

// setConfig sets a GDAL configuration option (after initGDAL).
func setConfig(k, v string) {
	ck, cv := C.CString(k), C.CString(v)
	C.gi_set_config(ck, cv)
	C.free(unsafe.Pointer(ck))
	C.free(unsafe.Pointer(cv))
}

// cVersion is the GDAL release the binary runs with ("3.6.2").
func cVersion() string {
	if initGDAL() != nil {
		return ""
	}
	k := C.CString("RELEASE_NAME")
	defer C.free(unsafe.Pointer(k))
	return C.GoString(C.gi_GDALVersionInfo(k))
}

// cDataset is an open OGR data source.
type cDataset struct {
	h      C.GDALDatasetH
	Driver string // the GDAL driver's short name ("GPKG", "OpenFileGDB", ...)
	// OpenError is the last error GDAL reported while opening the
	// dataset, though it did open it ("" if none): for GML, the XML error
	// its prescan of a file without a schema met.
	OpenError string
}

// cOpen opens path read-only as a vector dataset with one of drivers (GDAL
// short names), passing the open options ("NAME=VALUE"). The error is
// GDAL's own message.
func cOpen(path string, drivers, options []string) (*cDataset, error) {
	if err := initGDAL(); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cdrv := cStrings(drivers)
	defer freeStrings(cdrv)
	copt := cStrings(options)
	defer freeStrings(copt)
	var cerr *C.char
	h := C.gi_open(cpath, cdrv, copt, &cerr)
	msg := takeErr(cerr)
	if h == nil {
		if msg == "" {
			msg = "not recognised as a supported file format"
		}
		return nil, errors.New(msg)
	}
	return &cDataset{h: h, Driver: C.GoString(C.gi_driver(h)), OpenError: msg}, nil
}

// Close frees the dataset; its Layers must not be used after.
func (d *cDataset) Close() {
	if d.h != nil {
		C.gi_GDALClose(d.h)
		d.h = nil
	}
}

// LayerCount is the number of layers (tables) in the dataset.
func (d *cDataset) LayerCount() int { return int(C.gi_GDALDatasetGetLayerCount(d.h)) }

// cLayer is one layer of a cDataset.
type cLayer struct {
	h          C.OGRLayerH
	defn       C.OGRFeatureDefnH
	Name       string
	GeomFields []GeomField
	Fields     []string
	// UTF8 reports whether OGR gives the layer's strings in UTF-8
	// (OLCStringsAsUTF8).
	UTF8 bool

	feat   C.OGRFeatureH
	buf    *C.uchar
	cap    C.size_t
	values *C.gi_value // len(Fields) of them, read by ReadFields
}

// Layer returns layer i (0 <= i < LayerCount).
func (d *cDataset) Layer(i int) *cLayer {
	h := C.gi_GDALDatasetGetLayer(d.h, C.int(i))
	l := &cLayer{h: h, defn: C.gi_OGR_L_GetLayerDefn(h)}
	l.Name = C.GoString(C.gi_OGR_L_GetName(h))
	for j := 0; j < int(C.gi_OGR_FD_GetGeomFieldCount(l.defn)); j++ {
		gf := C.gi_OGR_FD_GetGeomFieldDefn(l.defn, C.int(j))
		f := GeomField{Name: C.GoString(C.gi_OGR_GFld_GetNameRef(gf)), Type: GeomType(C.gi_OGR_GT_Flatten(C.gi_OGR_GFld_GetType(gf)))}
		if srs := C.gi_gfld_srs(h, C.int(j)); srs != nil {
			if w := C.gi_srs_wkt2(srs); w != nil {
				f.CRS = C.GoString(w)
				C.gi_CPLFree(unsafe.Pointer(w))
			}
			f.SwapXY = C.gi_swap_xy(srs) != 0
		}
		l.GeomFields = append(l.GeomFields, f)
	}
	for j := 0; j < int(C.gi_OGR_FD_GetFieldCount(l.defn)); j++ {
		l.Fields = append(l.Fields, C.GoString(C.gi_OGR_Fld_GetNameRef(C.gi_OGR_FD_GetFieldDefn(l.defn, C.int(j)))))
	}
	capName := C.CString("StringsAsUTF8")
	l.UTF8 = C.gi_OGR_L_TestCapability(h, capName) != 0
	C.free(unsafe.Pointer(capName))
	return l
}

// Next reads the next feature, freeing the previous one. It returns false
// at the end of the layer, or with an error (GDAL's message) when OGR
// could not read it.
func (l *cLayer) Next() (bool, error) {
	l.free()
	var cerr *C.char
	l.feat = C.gi_next(l.h, &cerr)
	msg := takeErr(cerr)
	if msg != "" {
		l.free()
		return false, errors.New(msg)
	}
	return l.feat != nil, nil
}

// FID is the current feature's id in its layer (-1 if it has none).
func (l *cLayer) FID() int64 { return int64(C.gi_OGR_F_GetFID(l.feat)) }

// WKB returns geometry field i of the current feature as 2D ISO WKB
// (little-endian, easting first when swap), nil for a null or empty
// geometry, and what was changed of it (GeomInfo). The bytes are valid until
// the next call of WKB, Next or Close.
func (l *cLayer) WKB(i int, swap bool) (wkb []byte, g GeomInfo, err error) {
	var n C.size_t
	var cv, zm C.int
	var cerr *C.char
	sw := C.int(0)
	if swap {
		sw = 1
	}
	switch C.gi_geom(l.feat, C.int(i), sw, &l.buf, &l.cap, &n, &cv, &zm, &cerr) {
	case 1:
		return nil, GeomInfo{}, nil
	case -1:
		return nil, GeomInfo{}, errors.New(takeErr(cerr))
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(l.buf)), int(n)), GeomInfo{Curved: cv != 0, DroppedZM: zm != 0}, nil
}

// ReadFields reads every attribute of the current feature (one cgo call),
// for Field.
func (l *cLayer) ReadFields() {
	if len(l.Fields) == 0 {
		return
	}
	if l.values == nil {
		l.values = (*C.gi_value)(C.calloc(C.size_t(len(l.Fields)), C.size_t(unsafe.Sizeof(C.gi_value{}))))
	}
	C.gi_fields(l.feat, l.defn, C.int(len(l.Fields)), l.values)
}

// Field returns attribute i of the current feature, as ReadFields read
// it.
func (l *cLayer) Field(i int) Value {
	v := &unsafe.Slice(l.values, len(l.Fields))[i]
	if v.kind == 8 {
		v.s, v.kind = C.gi_OGR_F_GetFieldAsString(l.feat, C.int(i)), 3
	}
	out := Value{Kind: Kind(v.kind), Int: int64(v.i), Real: float64(v.d)}
	switch out.Kind {
	case String:
		out.Str = unsafe.Slice((*byte)(unsafe.Pointer(v.s)), int(C.strlen(v.s)))
	case Date, DateTime, Time:
		out.Year, out.Month, out.Day, out.Hour, out.Minute, out.TZ = int(v.y), int(v.mo), int(v.da), int(v.h), int(v.mi), int(v.tz)
		out.Second = float64(v.sec)
	}
	return out
}

// Close frees the current feature and the WKB buffer.
func (l *cLayer) Close() {
	l.free()
	if l.buf != nil {
		C.free(unsafe.Pointer(l.buf))
		l.buf, l.cap = nil, 0
	}
	if l.values != nil {
		C.free(unsafe.Pointer(l.values))
		l.values = nil
	}
}

func (l *cLayer) free() {
	if l.feat != nil {
		C.gi_OGR_F_Destroy(l.feat)
		l.feat = nil
	}
}

// Reset rewinds the layer to its first feature.
func (l *cLayer) Reset() { l.free(); C.gi_OGR_L_ResetReading(l.h) }

func cStrings(ss []string) **C.char {
	if len(ss) == 0 {
		return nil
	}
	arr := (**C.char)(C.calloc(C.size_t(len(ss)+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	s := unsafe.Slice(arr, len(ss)+1)
	for i, v := range ss {
		s[i] = C.CString(v)
	}
	return arr
}

func freeStrings(arr **C.char) {
	if arr == nil {
		return
	}
	for _, p := range unsafe.Slice(arr, 1<<20) {
		if p == nil {
			break
		}
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(arr))
}

func takeErr(c *C.char) string {
	if c == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(c))
	return C.GoString(c)
}

// cPolygonal is GeomType.Polygonal as GDAL answers it (for tests).
func cPolygonal(t GeomType) bool {
	g := C.OGRwkbGeometryType(t)
	return C.gi_OGR_GT_IsSubClassOf(g, C.wkbCurvePolygon) != 0 || C.gi_OGR_GT_IsSubClassOf(g, C.wkbMultiSurface) != 0
}
