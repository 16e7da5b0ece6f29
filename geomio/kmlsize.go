package geomio

import (
	"fmt"
	"os"
)

// checkKMLSize refuses a KML document larger than max bytes before it is
// opened. GDAL's KML readers (LIBKML, and the older KML driver) parse the
// whole document into memory, so KML is the one format whose reading
// memory grows with the file (about 8 bytes of memory per byte of KML
// with LIBKML); the limit keeps a worker's memory bounded, and the error
// says how to bring such a file in: converted to a format read feature by
// feature. file names the document in errors (for a KMZ, the .kml inside).
func checkKMLSize(path, file string, max int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return &Error{File: file, Problem: "cannot read as KML", Err: err}
	}
	if st.Size() <= max {
		return nil
	}
	return &Error{File: file, Problem: "KML too large", Err: &LimitError{Limit: LimitKMLBytes, Max: max, What: fmt.Sprintf(
		"a KML document of %d bytes, more than %d: GDAL's KML reader holds the whole document in memory; convert it to a GeoPackage or FlatGeobuf, which are read feature by feature (ogr2ogr -f GPKG NAME.gpkg NAME.kml)",
		st.Size(), max)}}
}
