//go:build !cgo || geoingest_nogdal

package ogr

import (
	"fmt"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// ReaderAvailable reports whether this build reads the formats of
// ogrFormats (with GDAL): not this slim one.
const ReaderAvailable = false

// OpenReader refuses: this build has no GDAL.
func OpenReader(path, file string, f Format, opts core.Options, base int64) (core.LayerReader, error) {
	return nil, &core.Error{File: file, Problem: fmt.Sprintf("%s needs GDAL, which this slim build of geoingest lacks (it reads shapefiles, GeoJSON, GeoParquet and KML): use the full build", f.title)}
}
