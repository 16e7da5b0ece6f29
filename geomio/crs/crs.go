// Package crs resolves the coordinate reference system of an upload (a
// .prj, a GeoJSON crs member) with PROJ, the library PostGIS itself uses
// for ST_Transform.
//
// Resolve parses the text with PROJ (ESRI WKT, WKT 1, WKT 2, PROJ strings,
// URNs and AUTHORITY:CODE names), and finds what PostGIS should transform
// it with:
//
//   - an EPSG identifier carried by the definition itself, when the
//     definition is that EPSG CRS (Authority);
//   - else an EPSG CRS that proj_identify finds, accepted the way GDAL
//     accepts one: the only candidate at 90 % or more, or a candidate at
//     70 % or more that is equivalent to the definition once both have
//     their axes in easting, northing order (Identified);
//   - else the definition itself (Custom), exported by PROJ as WKT and as
//     a PROJ string, for the caller to register in spatial_ref_sys.
//
// A definition that PROJ can only transform to WGS 84 with a "ballpark"
// transformation (one that ignores the datum shift, silently off by up to
// hundreds of metres) is refused, unless its datum lies on the WGS 84 or
// GRS 80 ellipsoid, where the ballpark is the null transformation every
// GIS applies. Axis order is always easting (longitude) first, whatever a
// WKT 1 AXIS says: that is how shapefiles and GeoJSON store coordinates.
//
// The package needs cgo and PROJ (Debian: libproj-dev to build, proj-data
// at run time). Built without cgo, Resolve returns an error that says so.
package crs

import (
	"fmt"

	"github.com/geoingest/geoingest/geomio/internal/hint"
)

// Method says how the CRS of a layer was found.
type Method string

const (
	// Authority: the definition names its EPSG code and is that CRS.
	Authority Method = "authority"
	// Identified: PROJ identified an equivalent EPSG CRS.
	Identified Method = "identified"
	// Custom: no EPSG CRS is equivalent; the definition itself is used.
	Custom Method = "custom"
	// Override: the caller gave the EPSG code (the source SRID), whatever
	// the file says.
	Override Method = "override"
	// Default: the format fixes the CRS (RFC 7946 GeoJSON without a crs
	// member is EPSG:4326).
	Default Method = "default"
)

// CRS is what a layer's CRS was resolved to.
type CRS struct {
	// Method is how it was found.
	Method Method `json:"method"`
	// EPSG is the EPSG code PostGIS transforms with (every method but
	// Custom).
	EPSG int `json:"epsg,omitempty"`
	// Confidence is proj_identify's confidence in the EPSG code, 0-100
	// (100 for Authority).
	Confidence int `json:"confidence,omitempty"`
	// Name is the CRS's name as PROJ reads it.
	Name string `json:"name,omitempty"`
	// Definition is, for Custom, the definition as PROJ writes it in WKT
	// (WKT 2019, or WKT 1 when that does not fit in spatial_ref_sys), with
	// easting-first axes: spatial_ref_sys.srtext.
	Definition string `json:"definition,omitempty"`
	// PROJString is, for Custom, the PROJ.4 string of the definition where
	// one exists: spatial_ref_sys.proj4text.
	PROJString string `json:"proj_string,omitempty"`
	// Transformation is the name of the coordinate operation PROJ prefers
	// from this CRS to WGS 84.
	Transformation string `json:"transformation,omitempty"`
	// Text is the CRS as the file gave it.
	Text string `json:"text,omitempty"`
	// Better, when set, is a more accurate transformation to WGS 84 than
	// Transformation that PROJ could use if grids that are not installed
	// were (see GridOperation.Fix).
	Better *GridOperation `json:"better_transformation,omitempty"`
}

// String describes c in a few words for messages and reports:
// "EPSG:2249 (identified, 90 %)", "custom: World_Robinson".
func (c CRS) String() string {
	switch c.Method {
	case Custom:
		return "custom: " + c.Name
	case Identified:
		return fmt.Sprintf("EPSG:%d (identified, %d %%)", c.EPSG, c.Confidence)
	case "":
		return "none"
	default:
		return fmt.Sprintf("EPSG:%d (%s)", c.EPSG, c.Method)
	}
}

// maxDefinition is the longest srtext and proj4text spatial_ref_sys holds
// (both are varchar(2048)).
const maxDefinition = 2048

// InputError is a CRS that cannot be used as given: PROJ cannot read it,
// it is not a horizontal CRS, or its only transformation to WGS 84 is a
// ballpark. It will not change on retry. Other errors from Resolve (PROJ
// missing its database) are the machine's, not the input's.
type InputError struct {
	Msg string
}

func (e *InputError) Error() string { return e.Msg }

// overrideHint is how a user says what the CRS is when geoingest cannot
// use the file's, in the caller's words (hint.Set).
func overrideHint() string { return "if you know the CRS's EPSG code, give it " + hint.Give(hint.CRS) }
