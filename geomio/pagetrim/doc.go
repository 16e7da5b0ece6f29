// Package pagetrim gives back the resident pages of the process's own
// code and read-only data that it no longer uses: the pages of the
// executable and of the loaded shared libraries that start-up and one-off
// work (package initialisation, the dynamic loader's symbol lookups and
// relocations, a file's opening) touched once. Pages the process goes on
// using fault back in, from the page cache, on their next use; so after a
// Trim the process's resident set holds what it has used since.
//
// Trim is Linux only; elsewhere (and in a build without cgo) it does
// nothing and reports so.
//
// It is in geomio's tree because GDAL's reading child (geomio/ogr) trims
// around libgdal's loading and after a file's opening, from ogr's init,
// before any main could hand it a trimmer; the service (cmd/geoingest)
// trims with it too, after start-up and at the first large job.
package pagetrim

// Result is what one Trim did.
type Result struct {
	// Supported is false where Trim does nothing (not Linux, no cgo).
	Supported bool
	// Ranges is the number of address ranges given back; Bytes their
	// total length (a bound on the resident memory given back: only the
	// resident pages of each range were counted in the process's RSS).
	Ranges int
	Bytes  int64
}
