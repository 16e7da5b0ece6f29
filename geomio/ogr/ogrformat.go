package ogr

import (
	"bytes"
	"path"
	"strings"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// Format is a format read with GDAL's vector library: the GDAL drivers
// allowed to open it (no other driver ever sees the file) and their open
// options.
type Format struct {
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
	fmtGPKG       = Format{name: core.FormatGPKG, title: "GeoPackage", drivers: []string{"GPKG"}}
	FileGDB       = Format{name: core.FormatFileGDB, title: "File Geodatabase", drivers: []string{"OpenFileGDB"}}
	fmtFlatGeobuf = Format{name: core.FormatFlatGeobuf, title: "FlatGeobuf", drivers: []string{"FlatGeobuf"}}
	// GML: coordinates in the axis order the CRS defines (a lat/long CRS
	// given as a URN is swapped to long/lat, the order geoingest's CRSs
	// use, see package crs); no .gfs written beside the file, no schema
	// downloaded.
	GML = Format{name: core.FormatGML, title: "GML", drivers: []string{"GML"}, options: []string{
		"INVERT_AXIS_ORDER_IF_LAT_LONG=YES", "CONSIDER_EPSG_AS_URN=AUTO", "WRITE_GFS=NO", "DOWNLOAD_SCHEMA=NO",
	}}
	fmtMapInfo = Format{name: core.FormatMapInfo, title: "MapInfo", drivers: []string{"MapInfo File"}}
	fmtCSV     = Format{name: core.FormatCSV, title: "CSV", drivers: []string{"CSV"}, options: []string{
		"GEOM_POSSIBLE_NAMES=" + strings.Join(CSVGeometryColumns, ","), "KEEP_GEOM_COLUMNS=NO",
	}}
)

// OGRSuffixes are the file suffixes of the formats beyond GeoJSON,
// shapefiles and GeoParquet (compared case-insensitively): KML and KMZ,
// read by geoingest's own reader (package kml), and the formats read with
// GDAL. A File Geodatabase is uploaded as a zip.
var OGRSuffixes = []string{".gpkg", ".fgb", ".kml", ".kmz", ".gml", ".gml.gz", ".xml", ".xml.gz", ".tab", ".mif", ".csv"}

// FormatOf returns the GDAL format of a file by its name and first
// bytes, and whether it is one.
func FormatOf(name string, head []byte) (Format, bool) {
	lower := strings.ToLower(name)
	ext := path.Ext(lower)
	if ext == ".gz" {
		ext = path.Ext(strings.TrimSuffix(lower, ".gz"))
		if ext == ".gml" || ext == ".xml" {
			return GML, true
		}
		return Format{}, false
	}
	switch {
	case ext == ".gpkg" || bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		return fmtGPKG, true
	case ext == ".fgb" || bytes.HasPrefix(head, []byte("fgb")):
		return fmtFlatGeobuf, true
	case ext == ".gml" || ext == ".xml":
		return GML, true
	case ext == ".tab" || ext == ".mif":
		return fmtMapInfo, true
	case ext == ".csv":
		return fmtCSV, true
	}
	return Format{}, false
}
