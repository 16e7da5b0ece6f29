//go:build !cgo || geoingest_nogdal

package geomio

import "fmt"

// ogrAvailable reports whether this build reads the formats of
// ogrFormats (with GDAL): not this slim one.
const ogrAvailable = false

// openOGR refuses: this build has no GDAL.
func openOGR(path, file string, f ogrFormat, opts Options, base int64) (layerReader, error) {
	return nil, &Error{File: file, Problem: fmt.Sprintf("%s needs GDAL, which this slim build of geoingest lacks (it reads shapefiles, GeoJSON, GeoParquet and KML): use the full build", f.title)}
}
