package ingest

import "github.com/geoingest/geoingest/geomio"

// Prefilter is what the write gate needs for a version's raw-bytes
// prefilter (ingest/postgis, prefilter.go; docs/design.md "Versions as
// changes"): the features whose salted raw hash is a row's of the current
// generation are that row, and the job's reader reads past them.
//
// The gate opens the file again for a first read of the hashes only
// (Open), finds the kept features, and fills Skip, the set the job's
// reader skips, before it reads anything (a reader that has begun closes
// the set: the gate then reads the version whole).
type Prefilter struct {
	// Open opens the job's file again, with the options the job's reader
	// was opened with, and RawHashOnly when rawOnly; never with Skip.
	Open func(rawOnly bool) (geomio.Reader, error)
	// Skip is the job's reader's Options.Skip.
	Skip *geomio.SkipSet
}
