//go:build cgo && !geoingest_nogdal

// shim.c is the C side of package ogr: libgdal loaded with dlopen, the
// drivers registered, and the calls the Go side makes (declared in
// shim.h), each reading GDAL's error state within the same call.

#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <gdal.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <cpl_error.h>
#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_http.h>
#include "shim.h"

// The drivers geoingest opens files with, registered alone: GDALAllRegister
// would also register (and load the plugins of) the two hundred others,
// which costs memory in every process and lets no file reach them anyway.
void RegisterOGRGeoPackage(void);
void RegisterOGROpenFileGDB(void);
void RegisterOGRFlatGeobuf(void);
void RegisterOGRGML(void);
void RegisterOGRTAB(void);
void RegisterOGRCSV(void);


// libgdal is loaded with dlopen when the first file that needs it is
// opened, not linked: loading it and the shared libraries it brings costs
// a process memory (about 18 MB) that the shapefile, GeoJSON and
// GeoParquet paths have no use for. Every GDAL function is called through
// a pointer that gi_load fills with dlsym; the prototypes come from GDAL's
// headers.
#define GI_FUNCS(X) X(CPLErrorReset) X(VSIFree) X(CPLGetLastErrorMsg) X(CPLGetLastErrorType) X(CPLSetConfigOption) X(CPLSetErrorHandler) X(CPLQuietErrorHandler) X(GDALGetDatasetDriver) X(GDALGetDriverShortName) X(GDALOpenEx) X(OGR_FD_GetFieldDefn) X(OGR_FD_GetGeomFieldDefn) X(OGR_F_GetFieldAsDateTimeEx) X(OGR_F_GetFieldAsDouble) X(OGR_F_GetFieldAsInteger) X(OGR_F_GetFieldAsInteger64) X(OGR_F_GetFieldAsString) X(OGR_F_GetGeomFieldRef) X(OGR_F_IsFieldSetAndNotNull) X(OGR_Fld_GetSubType) X(OGR_Fld_GetType) X(OGR_GFld_GetSpatialRef) X(OGR_G_DestroyGeometry) X(OGR_G_ExportToIsoWkb) X(OGR_G_FlattenTo2D) X(OGR_G_GetLinearGeometry) X(OGR_G_HasCurveGeometry) X(OGR_G_Is3D) X(OGR_G_IsEmpty) X(OGR_G_IsMeasured) X(OGR_G_SwapXY) X(OGR_G_WkbSize) X(OGR_L_GetLayerDefn) X(OGR_L_GetNextFeature) X(OGR_L_GetSpatialRef) X(OSRExportToWktEx) X(OSRGetAxis) X(OSRGetDataAxisToSRSAxisMapping) X(RegisterOGRCSV) X(RegisterOGRFlatGeobuf) X(RegisterOGRGML) X(RegisterOGRGeoPackage) X(RegisterOGROpenFileGDB) X(RegisterOGRTAB) X(GDALClose) X(GDALDatasetGetLayerCount) X(GDALDatasetGetLayer) X(GDALVersionInfo) X(OGR_GT_IsSubClassOf) X(OGRGeometryTypeToName) X(OGR_GT_Flatten) X(OGR_L_GetName) X(OGR_FD_GetGeomFieldCount) X(OGR_GFld_GetNameRef) X(OGR_GFld_GetType) X(OGR_FD_GetFieldCount) X(OGR_Fld_GetNameRef) X(OGR_L_TestCapability) X(OGR_F_GetFID) X(OGR_F_Destroy) X(OGR_L_ResetReading) X(CPLHTTPSetFetchCallback) X(VSICalloc) X(CPLStrdup) X(OGR_G_GetGeometryType) X(OGR_G_Clone) X(OGR_G_ForceToMultiPolygon)
#define GI_DECL(name) static __typeof__(&name) gi_p_##name;
GI_FUNCS(GI_DECL)

// gi_load opens libgdal and finds every function, or returns why not.
static const char *gi_load(void) {
	void *h = dlopen("libgdal.so.32", RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) h = dlopen("libgdal.so", RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) return dlerror();
#define GI_LOAD(name) if ((gi_p_##name = (__typeof__(gi_p_##name))dlsym(h, #name)) == NULL) return "libgdal has no " #name;
	GI_FUNCS(GI_LOAD)
	return NULL;
}
#define CPLErrorReset (*gi_p_CPLErrorReset)
#define VSIFree (*gi_p_VSIFree)
#define CPLGetLastErrorMsg (*gi_p_CPLGetLastErrorMsg)
#define CPLGetLastErrorType (*gi_p_CPLGetLastErrorType)
#define CPLSetConfigOption (*gi_p_CPLSetConfigOption)
#define CPLSetErrorHandler (*gi_p_CPLSetErrorHandler)
#define CPLQuietErrorHandler (*gi_p_CPLQuietErrorHandler)
#define GDALGetDatasetDriver (*gi_p_GDALGetDatasetDriver)
#define GDALGetDriverShortName (*gi_p_GDALGetDriverShortName)
#define GDALOpenEx (*gi_p_GDALOpenEx)
#define OGR_FD_GetFieldDefn (*gi_p_OGR_FD_GetFieldDefn)
#define OGR_FD_GetGeomFieldDefn (*gi_p_OGR_FD_GetGeomFieldDefn)
#define OGR_F_GetFieldAsDateTimeEx (*gi_p_OGR_F_GetFieldAsDateTimeEx)
#define OGR_F_GetFieldAsDouble (*gi_p_OGR_F_GetFieldAsDouble)
#define OGR_F_GetFieldAsInteger (*gi_p_OGR_F_GetFieldAsInteger)
#define OGR_F_GetFieldAsInteger64 (*gi_p_OGR_F_GetFieldAsInteger64)
#define OGR_F_GetFieldAsString (*gi_p_OGR_F_GetFieldAsString)
#define OGR_F_GetGeomFieldRef (*gi_p_OGR_F_GetGeomFieldRef)
#define OGR_F_IsFieldSetAndNotNull (*gi_p_OGR_F_IsFieldSetAndNotNull)
#define OGR_Fld_GetSubType (*gi_p_OGR_Fld_GetSubType)
#define OGR_Fld_GetType (*gi_p_OGR_Fld_GetType)
#define OGR_GFld_GetSpatialRef (*gi_p_OGR_GFld_GetSpatialRef)
#define OGR_G_DestroyGeometry (*gi_p_OGR_G_DestroyGeometry)
#define OGR_G_ExportToIsoWkb (*gi_p_OGR_G_ExportToIsoWkb)
#define OGR_G_FlattenTo2D (*gi_p_OGR_G_FlattenTo2D)
#define OGR_G_GetLinearGeometry (*gi_p_OGR_G_GetLinearGeometry)
#define OGR_G_HasCurveGeometry (*gi_p_OGR_G_HasCurveGeometry)
#define OGR_G_Is3D (*gi_p_OGR_G_Is3D)
#define OGR_G_IsEmpty (*gi_p_OGR_G_IsEmpty)
#define OGR_G_IsMeasured (*gi_p_OGR_G_IsMeasured)
#define OGR_G_SwapXY (*gi_p_OGR_G_SwapXY)
#define OGR_G_WkbSize (*gi_p_OGR_G_WkbSize)
#define OGR_L_GetLayerDefn (*gi_p_OGR_L_GetLayerDefn)
#define OGR_L_GetNextFeature (*gi_p_OGR_L_GetNextFeature)
#define OGR_L_GetSpatialRef (*gi_p_OGR_L_GetSpatialRef)
#define OSRExportToWktEx (*gi_p_OSRExportToWktEx)
#define OSRGetAxis (*gi_p_OSRGetAxis)
#define OSRGetDataAxisToSRSAxisMapping (*gi_p_OSRGetDataAxisToSRSAxisMapping)
#define RegisterOGRCSV (*gi_p_RegisterOGRCSV)
#define RegisterOGRFlatGeobuf (*gi_p_RegisterOGRFlatGeobuf)
#define RegisterOGRGML (*gi_p_RegisterOGRGML)
#define RegisterOGRGeoPackage (*gi_p_RegisterOGRGeoPackage)
#define RegisterOGROpenFileGDB (*gi_p_RegisterOGROpenFileGDB)
#define RegisterOGRTAB (*gi_p_RegisterOGRTAB)
#define GDALClose (*gi_p_GDALClose)
#define GDALDatasetGetLayerCount (*gi_p_GDALDatasetGetLayerCount)
#define GDALDatasetGetLayer (*gi_p_GDALDatasetGetLayer)
#define GDALVersionInfo (*gi_p_GDALVersionInfo)
#define OGR_GT_IsSubClassOf (*gi_p_OGR_GT_IsSubClassOf)
#define OGRGeometryTypeToName (*gi_p_OGRGeometryTypeToName)
#define OGR_GT_Flatten (*gi_p_OGR_GT_Flatten)
#define OGR_L_GetName (*gi_p_OGR_L_GetName)
#define OGR_FD_GetGeomFieldCount (*gi_p_OGR_FD_GetGeomFieldCount)
#define OGR_GFld_GetNameRef (*gi_p_OGR_GFld_GetNameRef)
#define OGR_GFld_GetType (*gi_p_OGR_GFld_GetType)
#define OGR_FD_GetFieldCount (*gi_p_OGR_FD_GetFieldCount)
#define OGR_Fld_GetNameRef (*gi_p_OGR_Fld_GetNameRef)
#define OGR_L_TestCapability (*gi_p_OGR_L_TestCapability)
#define OGR_F_GetFID (*gi_p_OGR_F_GetFID)
#define OGR_F_Destroy (*gi_p_OGR_F_Destroy)
#define OGR_L_ResetReading (*gi_p_OGR_L_ResetReading)
#define CPLHTTPSetFetchCallback (*gi_p_CPLHTTPSetFetchCallback)
#define VSICalloc (*gi_p_VSICalloc)
#define CPLStrdup (*gi_p_CPLStrdup)
#define OGR_G_GetGeometryType (*gi_p_OGR_G_GetGeometryType)
#define OGR_G_Clone (*gi_p_OGR_G_Clone)
#define OGR_G_ForceToMultiPolygon (*gi_p_OGR_G_ForceToMultiPolygon)

// gi_no_http answers every HTTP request GDAL would make (CPLHTTPFetch: a
// schema an .xsd includes or imports, a schema GDAL's GML registry names)
// with an error, without a connection: geoingest never fetches from the
// network on an uploader's behalf.
static CPLHTTPResult *gi_no_http(const char *url, CSLConstList opts, GDALProgressFunc pfn, void *parg,
		CPLHTTPFetchWriteFunc wfn, void *warg, void *user) {
	CPLHTTPResult *r = (CPLHTTPResult *)VSICalloc(1, sizeof(CPLHTTPResult));
	if (r == NULL) return NULL;
	r->nStatus = 1;
	r->pszErrBuf = CPLStrdup("network access is disabled in geoingest");
	return r;
}

const char *gi_init(void) {
	const char *err = gi_load();
	if (err != NULL) return err;
	RegisterOGRGeoPackage();
	RegisterOGROpenFileGDB();
	RegisterOGRFlatGeobuf();
	RegisterOGRGML();
	RegisterOGRTAB();
	RegisterOGRCSV();
	// Errors are read through CPLGetLastErrorMsg, never printed.
	CPLSetErrorHandler(CPLQuietErrorHandler);
	// No network: a file may name remote schemas or resources.
	CPLHTTPSetFetchCallback(gi_no_http, NULL);
	CPLSetConfigOption("GDAL_HTTP_TIMEOUT", "1");
	CPLSetConfigOption("CPL_VSIL_CURL_ALLOWED_EXTENSIONS", "none");
	// GML: no application schema downloaded (a WFS response names its
	// DescribeFeatureType URL), no xlink:href resolved (which would fetch
	// remote documents).
	CPLSetConfigOption("GML_DOWNLOAD_WFS_SCHEMA", "NO");
	CPLSetConfigOption("GML_SKIP_RESOLVE_ELEMS", "ALL");
	// Nothing remote, whatever a file names (the sandbox's seccomp filter
	// is the guarantee; these make GDAL not try): no retries of a failed
	// request, no credentials for /vsis3/ and its kind, no SQL
	// function of a GeoPackage reaching another file.
	CPLSetConfigOption("GDAL_HTTP_MAX_RETRY", "0");
	CPLSetConfigOption("AWS_NO_SIGN_REQUEST", "YES");
	CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "/nonexistent");
	CPLSetConfigOption("AWS_CONFIG_FILE", "/nonexistent");
	CPLSetConfigOption("CPL_GS_CREDENTIALS_FILE", "/nonexistent");
	CPLSetConfigOption("GDAL_HTTP_NETRC", "NO");
	CPLSetConfigOption("OGR_SQLITE_ALLOW_EXTERNAL_ACCESS", "NO");
	// Curves are linearised as GDAL does by default (ogr2ogr, ogrinfo):
	// one chord per 4 degrees of arc at most (OGR_ARC_STEPSIZE's
	// default; OGR_ARC_MAX_GAP's, none), pinned so that no release's
	// default or configuration changes a job's geometry (an empty or 0
	// step makes GDAL write thousands of points per arc).
	CPLSetConfigOption("OGR_ARC_STEPSIZE", "4");
	CPLSetConfigOption("OGR_ARC_MAX_GAP", "0");
	return NULL;
}

void gi_set_config(const char *k, const char *v) { CPLSetConfigOption(k, v); }

static char *gi_errdup(void) {
	if (CPLGetLastErrorType() >= CE_Failure) {
		const char *m = CPLGetLastErrorMsg();
		return strdup(m && *m ? m : "unknown GDAL error");
	}
	return NULL;
}

GDALDatasetH gi_open(const char *path, char **drivers, char **options, char **err) {
	CPLErrorReset();
	GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR,
		(const char *const *)drivers, (const char *const *)options, NULL);
	*err = gi_errdup();
	return ds;
}

const char *gi_driver(GDALDatasetH ds) {
	GDALDriverH d = GDALGetDatasetDriver(ds);
	return d ? GDALGetDriverShortName(d) : "";
}

// gi_srs_wkt2 exports srs as one-line WKT2 (2019), NULL if none. Free with CPLFree.
char *gi_srs_wkt2(OGRSpatialReferenceH srs) {
	if (srs == NULL) return NULL;
	char *wkt = NULL;
	const char *opts[] = {"FORMAT=WKT2_2019", "MULTILINE=NO", NULL};
	CPLErrorReset();
	if (OSRExportToWktEx(srs, &wkt, opts) != OGRERR_NONE) {
		CPLFree(wkt);
		return NULL;
	}
	return wkt;
}

// gi_swap_xy reports whether a layer's coordinates come northing (or
// latitude) first: the CRS's first axis points north or south and the data
// axis mapping keeps it first.
int gi_swap_xy(OGRSpatialReferenceH srs) {
	if (srs == NULL) return 0;
	OGRAxisOrientation o = OAO_Other;
	OSRGetAxis(srs, NULL, 0, &o);
	if (o != OAO_North && o != OAO_South) return 0;
	int n = 0;
	const int *m = OSRGetDataAxisToSRSAxisMapping(srs, &n);
	if (n < 2 || m == NULL) return 1;
	return m[0] == 1;
}

OGRSpatialReferenceH gi_gfld_srs(OGRLayerH l, int i) {
	OGRFeatureDefnH d = OGR_L_GetLayerDefn(l);
	OGRSpatialReferenceH srs = OGR_GFld_GetSpatialRef(OGR_FD_GetGeomFieldDefn(d, i));
	// Some drivers (MapInfo) give the CRS on the layer only.
	if (srs == NULL && i == 0) srs = OGR_L_GetSpatialRef(l);
	return srs;
}

OGRFeatureH gi_next(OGRLayerH l, char **err) {
	CPLErrorReset();
	OGRFeatureH f = OGR_L_GetNextFeature(l);
	*err = gi_errdup();
	return f;
}

// gi_geom exports geometry field i of f as 2D ISO WKB (little-endian) into
// *buf (grown with realloc as needed), in easting-first order (swap), with
// curves linearised (*curved set) and Z and M dropped (*zm set when it had
// either). A curve type whose segments are all straight (a CurvePolygon or
// MultiSurface of line strings, common in layers declared curved) is given
// as its linear type too, without *curved: nothing was approximated. A
// polyhedral surface, TIN or triangle (a File Geodatabase's multipatch
// building, a GeoPackage's 3D surfaces), or a collection of surfaces only,
// is given as the MultiPolygon of its faces, as ogr2ogr -nlt MULTIPOLYGON
// makes it (OGR_G_ForceToMultiPolygon); a collection with other members
// stays a collection.
// Returns 1 for a null or empty geometry, 0 on success, -1 on failure
// (*err set).
int gi_geom(OGRFeatureH f, int i, int swap, unsigned char **buf, size_t *cap, size_t *len, int *curved, int *zm, char **err) {
	*curved = 0; *zm = 0; *len = 0; *err = NULL;
	OGRGeometryH g = OGR_F_GetGeomFieldRef(f, i);
	if (g == NULL || OGR_G_IsEmpty(g)) return 1;
	*zm = OGR_G_Is3D(g) || OGR_G_IsMeasured(g);
	OGRGeometryH lin = NULL;
	CPLErrorReset();
	if (OGR_G_HasCurveGeometry(g, 0)) {
		*curved = OGR_G_HasCurveGeometry(g, 1);
		lin = OGR_G_GetLinearGeometry(g, 0, NULL);
		if (lin == NULL) { *curved = 0; *err = gi_errdup(); if (!*err) *err = strdup("cannot linearise curve geometry"); return -1; }
		g = lin;
	}
	OGRwkbGeometryType t = OGR_GT_Flatten(OGR_G_GetGeometryType(g));
	if (t == wkbTIN || t == wkbPolyhedralSurface || t == wkbTriangle || t == wkbGeometryCollection) {
		OGRGeometryH own = lin ? lin : OGR_G_Clone(g);
		if (own == NULL) { *err = strdup("out of memory"); return -1; }
		lin = OGR_G_ForceToMultiPolygon(own); // takes own
		if (lin == NULL) { *err = strdup("cannot read the surface's faces as polygons"); return -1; }
		g = lin;
	}
	OGR_G_FlattenTo2D(g); // the feature is freed before the next one is read
	if (swap) OGR_G_SwapXY(g);
	size_t n = (size_t)OGR_G_WkbSize(g);
	if (n > *cap) {
		unsigned char *b = realloc(*buf, n);
		if (b == NULL) { if (lin) OGR_G_DestroyGeometry(lin); *err = strdup("out of memory"); return -1; }
		*buf = b; *cap = n;
	}
	OGRErr e = OGR_G_ExportToIsoWkb(g, wkbNDR, *buf);
	if (lin) OGR_G_DestroyGeometry(lin);
	if (e != OGRERR_NONE) { *err = gi_errdup(); if (!*err) *err = strdup("cannot export geometry as WKB"); return -1; }
	*len = n;
	return 0;
}


static void gi_field(OGRFeatureH f, OGRFeatureDefnH defn, int i, gi_value *v) {
	memset(v, 0, sizeof *v);
	if (!OGR_F_IsFieldSetAndNotNull(f, i)) return;
	OGRFieldDefnH fd = OGR_FD_GetFieldDefn(defn, i);
	switch (OGR_Fld_GetType(fd)) {
	case OFTInteger:
		v->i = OGR_F_GetFieldAsInteger(f, i);
		v->kind = OGR_Fld_GetSubType(fd) == OFSTBoolean ? 4 : 1;
		return;
	case OFTInteger64:
		v->i = OGR_F_GetFieldAsInteger64(f, i);
		v->kind = OGR_Fld_GetSubType(fd) == OFSTBoolean ? 4 : 1;
		return;
	case OFTReal:
		v->d = OGR_F_GetFieldAsDouble(f, i); v->kind = 2;
		return;
	case OFTDate: case OFTDateTime: case OFTTime:
		OGR_F_GetFieldAsDateTimeEx(f, i, &v->y, &v->mo, &v->da, &v->h, &v->mi, &v->sec, &v->tz);
		v->kind = OGR_Fld_GetType(fd) == OFTDate ? 5 : OGR_Fld_GetType(fd) == OFTTime ? 7 : 6;
		return;
	case OFTString:
		v->s = OGR_F_GetFieldAsString(f, i); v->kind = 3; // the field's own text
		return;
	default:
		// Lists, binary: OGR formats them as text in a buffer that its
		// next such call frees, so they are read one at a time (kind 8).
		v->kind = 8;
		return;
	}
}

// gi_fields reads the feature's first n attributes into v, in one call.
void gi_fields(OGRFeatureH f, OGRFeatureDefnH defn, int n, gi_value *v) {
	for (int i = 0; i < n; i++) gi_field(f, defn, i, &v[i]);
}

// Wrappers of the GDAL functions the Go side calls (cgo cannot call
// through the pointers' macros).
void gi_GDALClose(GDALDatasetH h) { GDALClose(h); }
int gi_GDALDatasetGetLayerCount(GDALDatasetH h) { return GDALDatasetGetLayerCount(h); }
OGRLayerH gi_GDALDatasetGetLayer(GDALDatasetH h, int i) { return GDALDatasetGetLayer(h, i); }
const char *gi_GDALVersionInfo(const char *k) { return GDALVersionInfo(k); }
void gi_CPLFree(void *p) { CPLFree(p); }
int gi_OGR_GT_IsSubClassOf(OGRwkbGeometryType a, OGRwkbGeometryType b) { return OGR_GT_IsSubClassOf(a, b); }
const char *gi_OGRGeometryTypeToName(OGRwkbGeometryType t) { return OGRGeometryTypeToName(t); }
OGRwkbGeometryType gi_OGR_GT_Flatten(OGRwkbGeometryType t) { return OGR_GT_Flatten(t); }
OGRFeatureDefnH gi_OGR_L_GetLayerDefn(OGRLayerH l) { return OGR_L_GetLayerDefn(l); }
const char *gi_OGR_L_GetName(OGRLayerH l) { return OGR_L_GetName(l); }
int gi_OGR_FD_GetGeomFieldCount(OGRFeatureDefnH d) { return OGR_FD_GetGeomFieldCount(d); }
OGRGeomFieldDefnH gi_OGR_FD_GetGeomFieldDefn(OGRFeatureDefnH d, int i) { return OGR_FD_GetGeomFieldDefn(d, i); }
const char *gi_OGR_GFld_GetNameRef(OGRGeomFieldDefnH f) { return OGR_GFld_GetNameRef(f); }
OGRwkbGeometryType gi_OGR_GFld_GetType(OGRGeomFieldDefnH f) { return OGR_GFld_GetType(f); }
int gi_OGR_FD_GetFieldCount(OGRFeatureDefnH d) { return OGR_FD_GetFieldCount(d); }
OGRFieldDefnH gi_OGR_FD_GetFieldDefn(OGRFeatureDefnH d, int i) { return OGR_FD_GetFieldDefn(d, i); }
const char *gi_OGR_Fld_GetNameRef(OGRFieldDefnH f) { return OGR_Fld_GetNameRef(f); }
int gi_OGR_L_TestCapability(OGRLayerH l, const char *c) { return OGR_L_TestCapability(l, c); }
GIntBig gi_OGR_F_GetFID(OGRFeatureH f) { return OGR_F_GetFID(f); }
const char *gi_OGR_F_GetFieldAsString(OGRFeatureH f, int i) { return OGR_F_GetFieldAsString(f, i); }
void gi_OGR_F_Destroy(OGRFeatureH f) { OGR_F_Destroy(f); }
void gi_OGR_L_ResetReading(OGRLayerH l) { OGR_L_ResetReading(l); }
