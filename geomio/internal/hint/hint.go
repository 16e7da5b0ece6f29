// Package hint is how geomio's errors tell a user what to give when the
// file alone does not say it (its CRS, its text encoding, which layers to
// read), without naming the caller's options: geomio knows the problem
// (a code), the caller knows the user's words (a CLI flag, a route
// option). The caller sets them once with Set; until then each hint is a
// neutral phrase.
package hint

import (
	"strings"
	"sync/atomic"
)

// The codes of a hint. They are also the codes of geomio's errors
// (core.Error.Code) where the error is the input's.
const (
	// CRS: the source SRID, an EPSG code that overrides the file's CRS.
	CRS = "crs"
	// Encoding: the text encoding of the file's attributes.
	Encoding = "encoding"
	// Layer: the layers of a multi-layer file to read (args: their
	// names).
	Layer = "layer"
)

// Func returns how a user gives what code names, as a phrase that
// follows "give it" (a CLI flag and its route option); for Layer, the
// phrase that names args as the layers to read. "" keeps the neutral
// phrase.
type Func func(code string, args []string) string

var words atomic.Pointer[Func]

// Set makes f the source of every hint from now on (nil: the neutral
// phrases). The CLI and serve layer calls it once, before reading files.
func Set(f Func) {
	if f == nil {
		words.Store(nil)
		return
	}
	words.Store(&f)
}

// Give is the phrase for code: the caller's (Set), else a neutral one.
func Give(code string, args ...string) string {
	if f := words.Load(); f != nil {
		if s := (*f)(code, args); s != "" {
			return s
		}
	}
	switch code {
	case CRS:
		return "as the source SRID (an EPSG code)"
	case Encoding:
		return "as the encoding option"
	case Layer:
		return "the layers " + strings.Join(args, ", ")
	}
	return "to geoingest"
}
