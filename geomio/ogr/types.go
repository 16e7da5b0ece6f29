//go:build cgo && !geoingest_nogdal

package ogr

// The types of the data a dataset gives, shared by the reading child
// (which fills them from GDAL) and the parent (which decodes them from
// the child's frames). None of them calls GDAL: the parent never loads it.

// Available reports whether this build reads files with GDAL.
const Available = true

// GeomType is an OGR geometry type (OGRwkbGeometryType), flattened to 2D.
type GeomType int

// OGR's 2D geometry type codes, as GDAL's ogr_core.h numbers them.
const (
	typeUnknown            GeomType = 0
	typePolygon            GeomType = 3
	typeMultiPolygon       GeomType = 6
	typeGeometryCollection GeomType = 7
	typeCurvePolygon       GeomType = 10
	typeMultiSurface       GeomType = 12
	typeTriangle           GeomType = 17
)

// Polygonal reports whether t is a polygon, multipolygon or their curved
// kinds (CurvePolygon, MultiSurface): what OGR_GT_IsSubClassOf answers for
// wkbCurvePolygon or wkbMultiSurface.
func (t GeomType) Polygonal() bool {
	switch t {
	case typePolygon, typeCurvePolygon, typeTriangle, typeMultiPolygon, typeMultiSurface:
		return true
	}
	return false
}

// Mixed reports whether t allows any geometry (Unknown, GeometryCollection),
// as KML and GML layers often declare.
func (t GeomType) Mixed() bool {
	return t == typeUnknown || t == typeGeometryCollection
}

// GeomField describes one geometry field of a layer.
type GeomField struct {
	Name string
	Type GeomType
	// CRS is the field's CRS as one-line WKT2 (2019), "" when it has none.
	CRS string
	// SwapXY: the stored coordinates come northing (latitude) first, and
	// Next swaps them to easting first.
	SwapXY bool
}

// GeomInfo is what WKB changed of a geometry to give it as 2D linear WKB.
type GeomInfo struct {
	// Curved: it had curves (arcs, curve polygons, multi-surfaces), which
	// were approximated by line segments (OGR_G_GetLinearGeometry).
	Curved bool
	// DroppedZM: it had Z or M coordinates, which were dropped.
	DroppedZM bool
}

// Kind is the kind of an attribute value.
type Kind int

// Value kinds.
const (
	Null Kind = iota
	Integer
	Real
	String
	Boolean
	Date
	DateTime
	Time
)

// Value is one attribute of the current feature.
type Value struct {
	Kind Kind
	Int  int64
	Real float64
	// Str is the text of a String (lists and binary fields are given as
	// OGR formats them as text); valid until the next ReadFields or Next.
	Str                                []byte
	Year, Month, Day, Hour, Minute, TZ int
	Second                             float64
}
