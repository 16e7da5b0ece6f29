package geomio

import (
	"bytes"
	"path"
	"strings"
)

// ogrFormat is a format read with GDAL's vector library: the GDAL drivers
// allowed to open it (no other driver ever sees the file) and their open
// options.
type ogrFormat struct {
	name    string
	title   string
	drivers []string
	options []string
}

// CSVGeometryColumns are the column names a CSV's WKT geometry is looked
// for under, case-insensitively (GDAL's GEOM_POSSIBLE_NAMES: "*wkt*" is any
// name containing "wkt", as QGIS's "wkt_geom"). When several columns
// match, the one matching the earliest name here is read.
var CSVGeometryColumns = []string{"WKT", "geom", "geometry", "the_geom", "*wkt*"}

// csvGeometryRank is the position in CSVGeometryColumns of the first name
// that column name matches, len(CSVGeometryColumns) if none.
func csvGeometryRank(name string) int {
	name = strings.ToLower(name)
	for i, p := range CSVGeometryColumns {
		p = strings.ToLower(p)
		if inner, ok := strings.CutPrefix(p, "*"); ok {
			if inner, ok := strings.CutSuffix(inner, "*"); ok && strings.Contains(name, inner) {
				return i
			}
			continue
		}
		if name == p {
			return i
		}
	}
	return len(CSVGeometryColumns)
}

var (
	fmtGPKG       = ogrFormat{name: FormatGPKG, title: "GeoPackage", drivers: []string{"GPKG"}}
	fmtFileGDB    = ogrFormat{name: FormatFileGDB, title: "File Geodatabase", drivers: []string{"OpenFileGDB"}}
	fmtKML        = ogrFormat{name: FormatKML, title: "KML", drivers: []string{"LIBKML", "KML"}}
	fmtFlatGeobuf = ogrFormat{name: FormatFlatGeobuf, title: "FlatGeobuf", drivers: []string{"FlatGeobuf"}}
	// GML: coordinates in the axis order the CRS defines (a lat/long CRS
	// given as a URN is swapped to long/lat, the order geoingest's CRSs
	// use, see package crs); no .gfs written beside the file, no schema
	// downloaded.
	fmtGML = ogrFormat{name: FormatGML, title: "GML", drivers: []string{"GML"}, options: []string{
		"INVERT_AXIS_ORDER_IF_LAT_LONG=YES", "CONSIDER_EPSG_AS_URN=AUTO", "WRITE_GFS=NO", "DOWNLOAD_SCHEMA=NO",
	}}
	fmtMapInfo = ogrFormat{name: FormatMapInfo, title: "MapInfo", drivers: []string{"MapInfo File"}}
	fmtCSV     = ogrFormat{name: FormatCSV, title: "CSV", drivers: []string{"CSV"}, options: []string{
		"GEOM_POSSIBLE_NAMES=" + strings.Join(CSVGeometryColumns, ","), "KEEP_GEOM_COLUMNS=NO",
	}}
)

// OGRSuffixes are the file suffixes read with GDAL (compared
// case-insensitively). A File Geodatabase is uploaded as a zip.
var OGRSuffixes = []string{".gpkg", ".fgb", ".kml", ".kmz", ".gml", ".gml.gz", ".xml", ".xml.gz", ".tab", ".mif", ".csv"}

// MapInfoParts are the files beside a MapInfo .tab (.dat, .map, .id) or
// .mif (.mid): they never start a job on their own (IsSidecar).
var MapInfoParts = []string{".dat", ".map", ".id", ".mid"}

// ogrFormatOf returns the GDAL format of a file by its name and first
// bytes, and whether it is one.
func ogrFormatOf(name string, head []byte) (ogrFormat, bool) {
	lower := strings.ToLower(name)
	ext := path.Ext(lower)
	if ext == ".gz" {
		ext = path.Ext(strings.TrimSuffix(lower, ".gz"))
		if ext == ".gml" || ext == ".xml" {
			return fmtGML, true
		}
		return ogrFormat{}, false
	}
	switch {
	case ext == ".gpkg" || bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		return fmtGPKG, true
	case ext == ".fgb" || bytes.HasPrefix(head, []byte("fgb")):
		return fmtFlatGeobuf, true
	case ext == ".kml":
		return fmtKML, true
	case ext == ".gml" || ext == ".xml":
		return fmtGML, true
	case ext == ".tab" || ext == ".mif":
		return fmtMapInfo, true
	case ext == ".csv":
		return fmtCSV, true
	}
	return ogrFormat{}, false
}
