// Package zip reads a zip (or KMZ) upload: its entries extracted, bounded,
// to a private folder, and the shapefile sets, GeoJSON files, KML documents
// and GDAL datasets it holds read as one stream (core.MultiReader).
package zip
