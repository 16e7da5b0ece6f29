package geomio

import (
	"github.com/geoingest/geoingest/geomio/fileset"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/hint"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/twpayne/go-geom"
)

// The types and rules every format shares live in geomio/internal/core
// and geomio/fileset, the format readers in a folder each (geojson,
// shapefile, zip, kml, ogr, geoparquet). These are their names in the
// package callers use: the same types (aliases), values and functions.

func CheckEncoding(name string) error { return core.CheckEncoding(name) }

var DefaultLimits = core.DefaultLimits

type Error = core.Error

// The codes of an Error (core's): text not in the encoding it was read
// in; a CRS that cannot be used; layers that cannot be read as one job.
const (
	CodeEncoding = core.CodeEncoding
	CodeCRS      = core.CodeCRS
	CodeLayer    = core.CodeLayer
)

// HintFunc words how a user gives what a code names (hint.Func): geomio's
// errors name no caller's options; the caller sets its words once with
// SetHints (ingest sets its CLI flags and route options).
type HintFunc = hint.Func

// SetHints makes f the words of geomio's hints from now on.
func SetHints(f HintFunc) { hint.Set(f) }

type Feature = core.Feature

func FindShapefileSet(mainPath string) (ShapefileSet, error) {
	return fileset.FindShapefileSet(mainPath)
}

const FormatCSV = core.FormatCSV
const FormatFileGDB = core.FormatFileGDB
const FormatFlatGeobuf = core.FormatFlatGeobuf
const FormatGML = core.FormatGML
const FormatGPKG = core.FormatGPKG
const FormatGeoJSON = core.FormatGeoJSON
const FormatGeoJSONSeq = core.FormatGeoJSONSeq
const FormatGeoParquet = core.FormatGeoParquet
const FormatKML = core.FormatKML
const FormatMapInfo = core.FormatMapInfo
const FormatShapefile = core.FormatShapefile

func IsFileSet(name string) bool  { return fileset.IsFileSet(name) }
func IsInputError(err error) bool { return core.IsInputError(err) }
func IsLimitError(err error) bool { return core.IsLimitError(err) }
func IsSidecar(name string) bool  { return fileset.IsSidecar(name) }

type Layer = core.Layer

func LimitEnv(name string) string { return core.LimitEnv(name) }

type LimitError = core.LimitError

const LimitFeatureBytes = core.LimitFeatureBytes
const LimitFeatures = core.LimitFeatures
const LimitLayers = core.LimitLayers
const LimitProperties = core.LimitProperties
const LimitPropertyBytes = core.LimitPropertyBytes
const LimitReadCPU = core.LimitReadCPU
const LimitReadMemory = core.LimitReadMemory
const LimitReadTimeout = core.LimitReadTimeout
const LimitVertices = core.LimitVertices
const LimitZipBytes = core.LimitZipBytes
const LimitZipEntries = core.LimitZipEntries
const LimitZipRatio = core.LimitZipRatio

type Limits = core.Limits

var OGRSuffixes = ogr.OGRSuffixes

type Options = core.Options

// SkipSet is the features a reader reads past (Options.Skip).
type SkipSet = core.SkipSet

func ParseWKB(b []byte) (geom.T, error) { return core.ParseWKB(b) }

type Reader = core.Reader

var RequiredSidecars = fileset.RequiredSidecars

type SetRule = fileset.SetRule

func SetRuleOf(name string) (SetRule, bool) { return fileset.SetRuleOf(name) }

var SetRules = fileset.SetRules

func SetStem(name string) (string, bool) { return fileset.SetStem(name) }

var ShapefileParts = fileset.ShapefileParts

type ShapefileSet = fileset.ShapefileSet

func UnreadLayers(r Reader) []string { return core.UnreadLayers(r) }
func UnreadTables(r Reader) []string { return core.UnreadTables(r) }

// WithCRSCache is opts with a cache of the CRSs its reads resolve, for
// a caller that opens the same upload more than once (inspect's second
// pass over the layers a job leaves unread): each CRS text is resolved
// with PROJ once. Open gives each read one otherwise.
func WithCRSCache(opts Options) Options { return core.WithCRSCache(opts) }
func ReadLayers(r Reader) []Layer       { return core.ReadLayers(r) }
func Refusal(r Reader) error            { return core.Refusal(r) }
