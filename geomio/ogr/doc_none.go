//go:build !cgo || geoingest_nogdal

package ogr

// Available reports whether this build reads files with GDAL: not this
// slim one (built with the tag geoingest_nogdal, or without cgo).
const Available = false

// Version is "" in a build without GDAL.
func Version() string { return "" }
