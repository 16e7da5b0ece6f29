// Package core holds what every format reader of geomio shares: the
// Feature, Layer and Reader types, the input Error, the Options and
// Limits, a layer's CRS, the WKB decoders, and the one multi-layer
// iterator (MultiReader) that reads the layers of a file or archive as one
// stream. Package geomio gives callers these same types under its own
// names; the format packages (geojson, shapefile, zip, kml, ogr,
// geoparquet) import core, never geomio.
package core

import (
	"github.com/geoingest/geoingest/geomio/internal/hint"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/twpayne/go-geom"
)

// Feature is one feature of a layer.
type Feature struct {
	// Index is the feature's 0-based position in its layer. It is stable: the
	// same file always gives the same index to the same feature, so that
	// (job, index) identifies a row.
	Index int64
	// Layer is the name of the layer the feature belongs to (see
	// Layer.Name). A zip with several shapefile layers is read as one
	// stream, layer after layer in lexical order of their paths; Index keeps
	// counting across layers.
	Layer string
	// Geom is the feature's geometry, or nil for a null or empty geometry.
	// Polygons are promoted to MultiPolygon and flattened to XY. Other
	// geometry types (points, lines, collections) are passed through as they
	// are (flattened to XY) so that the caller's policy can count or reject
	// them. The SRID is set to Layer().SRID.
	Geom geom.T
	// Properties is the feature's attributes as a JSON object (never nil;
	// "{}" when there are none), with numbers, booleans, dates (as ISO 8601
	// strings) and nulls typed as JSON values.
	Properties []byte
	// DroppedZM is whether the geometry had Z or M coordinates in the file
	// (dropped: Geom is XY).
	DroppedZM bool
	// ID is a GeoJSON Feature's "id" member as it is in the file (a JSON
	// string or number, compact), nil when the feature has none or the
	// format has no such member. It is not stored: ingest makes it the
	// property "@id" when a source's key names it (ingest.FeatureIDKey).
	ID []byte
	// RawHash is a 64-bit hash (RawHasher) of the feature's bytes in the
	// file exactly as the reader delimited them, before decoding, under
	// the reader's limits and what else it reads every feature with (a
	// shapefile's .shp record content and .dbf record, under the DBF's
	// field descriptors and encoding); 0 when the reader does not delimit
	// a feature's bytes (every format but GeoJSON's streamed
	// FeatureCollections and sequences, and shapefiles). Equal bytes
	// under equal limits give equal hashes; what else decides the feature
	// (the layer's CRS, the caller's options) is not in it: a caller
	// salts it (ingest/prepare).
	RawHash uint64
	// Skipped marks a feature in Options.Skip between a reader's stages;
	// readers never yield one.
	Skipped bool
	// Members, when the reader wrote Properties itself with no white space
	// (a DBF record's), says where its members are, three offsets in
	// Properties each, in order: the key's opening quote, the value's first
	// byte (after the ':') and the byte after the value; nil when the
	// reader does not say, and a caller scans Properties. A caller that
	// changes Properties drops it.
	Members []int32
}

// Layer describes what a reader has found out about its layer. It is
// complete once Next has been called once.
type Layer struct {
	// Name is the layer's name: the file name without extension, or for a
	// zip, the path of the .shp inside the archive without extension.
	Name string
	// Format is "geojson", "geojsonseq", "shapefile", "geoparquet", or for the formats
	// read with GDAL "gpkg", "filegdb", "kml", "flatgeobuf", "gml",
	// "mapinfo" or "csv".
	Format string
	// SRID is the SRID PostGIS transforms the layer's coordinates with:
	// the EPSG code of its CRS, the SRID Options.RegisterCRS gave a custom
	// CRS, or 0 when the file names no CRS (or a custom one with no
	// RegisterCRS). RFC 7946 GeoJSON without a "crs" member is 4326.
	SRID int
	// CRS is how the layer's CRS was resolved (see package crs); its
	// Method is "" when the file names no CRS.
	CRS crs.CRS
	// CRSText is the CRS as the file gave it (the .prj WKT, or the GeoJSON
	// crs name), for error messages and the job record; "" if none.
	CRSText string
	// Encoding is the text encoding used to decode attributes ("UTF-8",
	// "ISO-8859-1", "windows-1252", ...), "" when not applicable.
	Encoding string
	// GeometryField is the geometry field read, when the layer has
	// several (GML); "" otherwise.
	GeometryField string
	// Linearised counts the features read so far whose curves (arcs,
	// curve polygons) were approximated by line segments.
	Linearised int64
	// DroppedZM counts the features read so far whose geometry had Z or M
	// coordinates, dropped (Feature.DroppedZM). Readers set the features'
	// flags; the Reader Open returns counts them.
	DroppedZM int64
	// CRSError, set only with Options.Preflight, is why a job would
	// refuse the layer's CRS (an *Error: an unusable CRS, or one layer
	// naming no CRS beside layers that name one); the layer is read
	// with SRID 0 all the same, so that a preflight can count it.
	CRSError error
}

// Reader is a pull iterator over the features of one layer.
//
//	for r.Next() {
//		f := r.Feature()
//	}
//	if err := r.Err(); err != nil { ... }
//
// Next returns false at the end of the layer or on the first error, which
// Err then reports. An error is always an *Error naming the file.
// The Feature returned is valid until the next call to Next.
type Reader interface {
	Next() bool
	Feature() Feature
	Layer() Layer
	Err() error
	Close() error
}

// Error is a problem with the input itself: it will not go away on retry.
type Error struct {
	// File is the path (or path inside an archive) of the offending file.
	File string
	// Problem is a short, lower-case description of what is wrong.
	Problem string
	// Err is the underlying cause, if any.
	Err error
	// Code names the kind of problem for a caller that acts on it (one
	// of the Code constants), "" for a file that is simply wrong.
	Code string
}

// The codes of an Error.
const (
	// CodeEncoding: text that is not in the encoding the file was read
	// in (a caller may let the user name the encoding).
	CodeEncoding = hint.Encoding
	// CodeCRS: a CRS that cannot be used (a caller may let the user give
	// the source SRID).
	CodeCRS = hint.CRS
	// CodeLayer: the file's layers cannot all be read as one job (a
	// caller may let the user name the layers to read).
	CodeLayer = hint.Layer
)

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.File, e.Problem, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Problem)
}

func (e *Error) Unwrap() error { return e.Err }

// IsInputError reports whether err is (or wraps) an *Error, that is, a
// permanent problem with the input.
func IsInputError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Options control how Open reads a file. The zero value is usable.
type Options struct {
	// SourceSRID, when non-zero, is the EPSG code to assume for every layer,
	// overriding whatever CRS the file names or does not name.
	SourceSRID int
	// RegisterCRS returns the SRID under which PostGIS knows a CRS that a
	// file names (an EPSG CRS, or a custom one PROJ finds no EPSG
	// equivalent for), registering it if need be. When nil, a layer gets
	// its CRS's EPSG code as SRID, or 0 for a custom CRS.
	RegisterCRS func(c crs.CRS) (srid int, err error)
	// DefaultEncoding is the DBF text encoding used when neither a .cpg
	// nor the DBF language driver id names one. "" means UTF-8.
	DefaultEncoding string
	// Limits bound what a hostile or broken archive may cost. Zero fields
	// take the defaults in DefaultLimits.
	Limits Limits
	// TempDir is where an archive (a zip) is extracted, in a directory
	// of its own removed by Close. "" means os.TempDir().
	TempDir string
	// Layers, when set, are the only layers read, by name, from a file
	// with several (GeoPackage, File Geodatabase, KML, GML, ...); a name
	// the file lacks is an *Error. Empty: every polygon layer.
	Layers []string
	// GeometryField, when set, is the geometry field read from layers that
	// have several (GML); empty: the first polygonal one.
	GeometryField string

	// Preflight reads what a job would refuse, for a preflight that
	// describes every layer (inspect): a layer whose CRS a job would
	// refuse is read, with the reason in Layer.CRSError; coordinates
	// that a default longitude/latitude CRS cannot hold are not checked
	// (the caller checks them); and the tables without geometry of a
	// GDAL format are listed by UnreadTables and can be named in Layers
	// (their features have no geometry). A problem that would fail Open
	// for the whole file is still an error. Jobs never set it.
	Preflight bool

	// Context, when done, stops a read in progress: a GDAL reading child
	// is killed and the read fails with the context's error. nil: never.
	Context context.Context

	// RawHashOnly makes the readers that hash each feature's raw bytes
	// (Feature.RawHash: GeoJSON's streamed collections and sequences,
	// shapefiles) yield each feature's Index, Layer and RawHash only,
	// without decoding it: Geom and Properties are nil, and what only
	// decoding finds wrong with a feature goes unseen. The other readers
	// decode as usual. It is the first pass of a version's raw-bytes
	// prefilter: which features need decoding at all.
	RawHashOnly bool

	// Skip, when set, is the features the readers that hash raw bytes
	// (see RawHashOnly) read past without decoding or yielding them (the
	// prefilter's second pass, SkipSet). The other readers ignore it.
	Skip *SkipSet

	// zip is set by the zip reader for the datasets it holds (WithArchive).
	zip *Archive
	// resolved are the CRSs resolved for this file's layers so far
	// (WithCRSCache), nil: none kept.
	resolved *CRSCache
	// readDeadline is when Open's reading must end (Limits.ReadTimeout
	// after Open): the deadline of every GDAL reading child it starts.
	readDeadline time.Time
}

// ArchiveOf is the zip the dataset opts reads lies in (nil: none). The
// format readers read it; only the zip reader sets it (withArchive).
func ArchiveOf(opts Options) *Archive { return opts.zip }

// WithArchive is opts for a dataset that lies in the zip z.
func WithArchive(opts Options, z *Archive) Options {
	opts.zip = z
	return opts
}

// ReadDeadlineOf is when the read opts is for must end (zero: not set).
func ReadDeadlineOf(opts Options) time.Time { return opts.readDeadline }

// WithReadDeadline is opts with its read's deadline set to t.
func WithReadDeadline(opts Options, t time.Time) Options {
	opts.readDeadline = t
	return opts
}
