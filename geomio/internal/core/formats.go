package core

// Format names, as reported in Layer.Format.
const (
	FormatGeoJSON    = "geojson"
	FormatGeoJSONSeq = "geojsonseq"
	FormatShapefile  = "shapefile"
)

// Format names of the formats read with GDAL (Layer.Format).
const (
	FormatGPKG       = "gpkg"
	FormatFileGDB    = "filegdb"
	FormatKML        = "kml"
	FormatFlatGeobuf = "flatgeobuf"
	FormatGML        = "gml"
	FormatMapInfo    = "mapinfo"
	FormatCSV        = "csv"
)

// FormatGeoParquet is Layer.Format of a GeoParquet file.
const FormatGeoParquet = "geoparquet"
