//go:build !cgo

package crs

import "errors"

// errNoCgo is what Resolve returns in a build without cgo: geoingest
// resolves CRSs with PROJ through cgo.
var errNoCgo = errors.New("geoingest was built without cgo, so it cannot use PROJ to read CRSs: install libproj-dev and proj-data (Debian) and build with CGO_ENABLED=1")

// Resolve always fails in a build without cgo.
func Resolve(text string) (CRS, error) { return CRS{Text: text}, errNoCgo }

// Version is "" in a build without cgo.
func Version() string { return "" }

// EPSGDefinition always fails in a build without cgo.
func EPSGDefinition(code int) (wkt, projString string, err error) { return "", "", errNoCgo }

// EPSGName always fails in a build without cgo.
func EPSGName(code int) (string, error) { return "", errNoCgo }

// TransformationIn always fails in a build without cgo.
func TransformationIn(c CRS, xmin, ymin, xmax, ymax float64) (string, *GridOperation, error) {
	return "", nil, errNoCgo
}
