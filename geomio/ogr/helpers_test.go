package ogr_test

import (
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
)

// These tests read GDAL's formats as geomio.Open does (the format
// chosen, zips unpacked, limits checked), under geomio's names.
type (
	Layer   = geomio.Layer
	Feature = geomio.Feature
	Reader  = geomio.Reader
	Options = geomio.Options
	Limits  = geomio.Limits
	Error   = geomio.Error
)

var (
	Open           = geomio.Open
	IsInputError   = geomio.IsInputError
	IsLimitError   = geomio.IsLimitError
	readAll        = geomiotest.ReadAll
	requireOGR2OGR = geomiotest.RequireOGR2OGR
	ogr2ogr        = geomiotest.OGR2OGR
	zipDir         = geomiotest.ZipDir
)

const corpusDir = "../../testdata/corpus"

// readOGR reads every feature of path as geomio.Open opens it
// (geomiotest.ReadOGR).
func readOGR(t *testing.T, path string, opts Options) ([]Feature, []Layer, error) {
	t.Helper()
	return geomiotest.ReadOGR(t, geomio.Open, path, opts)
}

const (
	CodeEncoding    = geomio.CodeEncoding
	FormatCSV       = geomio.FormatCSV
	FormatFileGDB   = geomio.FormatFileGDB
	FormatGML       = geomio.FormatGML
	FormatGPKG      = geomio.FormatGPKG
	FormatShapefile = geomio.FormatShapefile
)
