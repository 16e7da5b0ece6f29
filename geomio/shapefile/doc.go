// Package shapefile reads an ESRI shapefile set (.shp with its .dbf, .prj
// and .cpg) with geoingest's own bounded record and DBF decoders.
package shapefile
