//go:build !cgo || geoingest_nogdal

package ogr

// Available reports whether this build reads files with GDAL: not this
// slim one (built with the tag geoingest_nogdal, or without cgo).
const Available = false

// Version is "" in a build without GDAL.
func Version() string { return "" }

// Probe has no reading child to start in a build without GDAL.
func Probe() (string, error) { return "", nil }

// Complete reports whether protection is the whole sandbox; a build
// without GDAL needs none.
func Complete(protection string) bool { return true }

// KeepSpares has no reading child to keep in a build without GDAL.
func KeepSpares(n int) {}
