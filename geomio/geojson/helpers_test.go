package geojson

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// The names geomio's callers know these types by, for the tests.
type (
	Layer   = core.Layer
	Feature = core.Feature
	Reader  = core.Reader
	Options = core.Options
	SkipSet = core.SkipSet
	Limits  = core.Limits
	Error   = core.Error
)

var DefaultLimits = core.DefaultLimits

const (
	FormatGeoJSON     = core.FormatGeoJSON
	FormatGeoJSONSeq  = core.FormatGeoJSONSeq
	LimitFeatureBytes = core.LimitFeatureBytes
)

func FeatureLimitError(file string, layer string, index int64, le *core.LimitError) *Error {
	return core.FeatureLimitError(file, layer, index, le)
}

// corpusDir is the repository's corpus of real files.
const corpusDir = "../../testdata/corpus"

// fuzzInputDeadline is how long one fuzz input may take to read.
const fuzzInputDeadline = 10 * time.Second

func IsInputError(err error) bool { return core.IsInputError(err) }
func IsLimitError(err error) bool { return core.IsLimitError(err) }

const LimitVertices = core.LimitVertices

// openAll opens path as geomio.Open opens a GeoJSON file (a sequence
// when its text starts with the RFC 8142 record separator, or when its
// name ends in .geojsonl, .geojsons, .ndjson, .geojsonseq or .jsonl):
// with the default limits filled in and every feature checked against
// them; then drains and closes it.
func openAll(t testing.TB, path string, opts Options) (Layer, []Feature, error) {
	t.Helper()
	opts.Limits = opts.Limits.WithDefaults()
	var r Reader
	if isSeq(t, path) {
		sr, err := OpenSeq(path, opts)
		if err != nil {
			return Layer{}, nil, err
		}
		r = sr
	} else {
		fr, err := Open(path, opts)
		if err != nil {
			return Layer{}, nil, err
		}
		r = fr
	}
	r = core.WithLimits(r, path, opts.Limits)
	defer func() { require.NoError(t, r.Close()) }()
	fs, err := geomiotest.ReadAll(t, r)
	return r.Layer(), fs, err
}

// isSeq is geomio.Open's choice of a GeoJSON sequence (open.go).
func isSeq(t testing.TB, path string) bool {
	head, err := os.ReadFile(path)
	require.NoError(t, err)
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF}), " \t\r\n")
	if len(text) > 0 && text[0] == 0x1E {
		return true
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".geojsonl", ".geojsons", ".ndjson", ".geojsonseq", ".jsonl":
		return len(text) > 0 && text[0] == '{'
	}
	return false
}

// sq is a valid square, as a GeoJSON geometry.
const sq = `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}`
