// shim.h declares the C side of package ogr (shim.c) to its Go side:
// the functions cgo calls, each a wrapper that reads GDAL's error state in
// the same call, and the attribute value they fill in.
#ifndef GEOINGEST_OGR_SHIM_H
#define GEOINGEST_OGR_SHIM_H

#include <stddef.h>
#include <gdal.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <cpl_error.h>
#include <cpl_conv.h>

// gi_value is one attribute of a feature.
typedef struct {
	int kind; // 0 null, 1 integer, 2 real, 3 string, 4 boolean, 5 date, 6 date-time, 7 time
	long long i;
	double d;
	const char *s;
	int y, mo, da, h, mi, tz;
	float sec;
} gi_value;

const char *gi_init(void);
void gi_set_config(const char *k, const char *v);
GDALDatasetH gi_open(const char *path, char **drivers, char **options, char **err);
const char *gi_driver(GDALDatasetH ds);
char *gi_srs_wkt2(OGRSpatialReferenceH srs);
int gi_swap_xy(OGRSpatialReferenceH srs);
OGRSpatialReferenceH gi_gfld_srs(OGRLayerH l, int i);
OGRFeatureH gi_next(OGRLayerH l, char **err);
int gi_geom(OGRFeatureH f, int i, int swap, unsigned char **buf, size_t *cap, size_t *len, int *curved, int *zm, char **err);
void gi_fields(OGRFeatureH f, OGRFeatureDefnH defn, int n, gi_value *v);
void gi_GDALClose(GDALDatasetH h);
int gi_GDALDatasetGetLayerCount(GDALDatasetH h);
OGRLayerH gi_GDALDatasetGetLayer(GDALDatasetH h, int i);
const char *gi_GDALVersionInfo(const char *k);
void gi_CPLFree(void *p);
int gi_OGR_GT_IsSubClassOf(OGRwkbGeometryType a, OGRwkbGeometryType b);
const char *gi_OGRGeometryTypeToName(OGRwkbGeometryType t);
OGRwkbGeometryType gi_OGR_GT_Flatten(OGRwkbGeometryType t);
OGRFeatureDefnH gi_OGR_L_GetLayerDefn(OGRLayerH l);
const char *gi_OGR_L_GetName(OGRLayerH l);
int gi_OGR_FD_GetGeomFieldCount(OGRFeatureDefnH d);
OGRGeomFieldDefnH gi_OGR_FD_GetGeomFieldDefn(OGRFeatureDefnH d, int i);
const char *gi_OGR_GFld_GetNameRef(OGRGeomFieldDefnH f);
OGRwkbGeometryType gi_OGR_GFld_GetType(OGRGeomFieldDefnH f);
int gi_OGR_FD_GetFieldCount(OGRFeatureDefnH d);
OGRFieldDefnH gi_OGR_FD_GetFieldDefn(OGRFeatureDefnH d, int i);
const char *gi_OGR_Fld_GetNameRef(OGRFieldDefnH f);
int gi_OGR_L_TestCapability(OGRLayerH l, const char *c);
GIntBig gi_OGR_F_GetFID(OGRFeatureH f);
const char *gi_OGR_F_GetFieldAsString(OGRFeatureH f, int i);
void gi_OGR_F_Destroy(OGRFeatureH f);
void gi_OGR_L_ResetReading(OGRLayerH l);

#endif
