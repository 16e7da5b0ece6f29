package geojson

import (
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// limitCase is one feature over one limit, after a feature under all of
// them: the error must name the feature (index 1) and the limit.
type limitCase struct {
	name   string
	lim    Limits
	second string // the second feature
	want   string // what the error says after `layer "L", feature 1: `
}

var okFeature = geomiotest.FeatureJSONText(`{"id":1}`, geomiotest.PolygonOf(5))

var geojsonLimitCases = []limitCase{
	{"vertices", Limits{MaxVertices: 5}, geomiotest.FeatureJSONText(`{"id":2}`, geomiotest.PolygonOf(6)), "more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)"},
	{"vertices, reference path", Limits{MaxVertices: 5}, geomiotest.FeatureJSONText(`{"id":2}`, `{"type":"GeometryCollection","geometries":[`+geomiotest.PolygonOf(4)+`,`+geomiotest.PolygonOf(4)+`]}`), "more than 5 vertices"},
	{"vertices, duplicate member", Limits{MaxVertices: 5}, `{"type":"Feature","properties":{},"properties":{},"geometry":` + geomiotest.PolygonOf(6) + `}`, "more than 5 vertices"},
	{"property bytes", Limits{MaxPropertyBytes: 10}, geomiotest.FeatureJSONText(`{"id":2,"name":"abcdefghijklmnop"}`, geomiotest.PolygonOf(5)), "a property value of more than 10 bytes, over the limit (raise it with --max-property-bytes or GEOINGEST_MAX_PROPERTY_BYTES)"},
	{"property bytes, nested", Limits{MaxPropertyBytes: 10}, geomiotest.FeatureJSONText(`{"id":2, "o": {"a": [1, 2, 3, 4, 5]}}`, geomiotest.PolygonOf(5)), "a property value of more than 10 bytes"},
	{"properties", Limits{MaxProperties: 2}, geomiotest.FeatureJSONText(`{"a":1,"b":2,"c":3}`, geomiotest.PolygonOf(5)), "more than 2 properties, over the limit (raise it with --max-properties or GEOINGEST_MAX_PROPERTIES)"},
	{"features", Limits{MaxFeatures: 1}, geomiotest.FeatureJSONText(`{"id":2}`, geomiotest.PolygonOf(5)), "more than 1 features in the upload, over the limit (raise it with --max-features or GEOINGEST_MAX_FEATURES)"},
}

func TestLimitsGeoJSON(t *testing.T) {
	t.Parallel()
	cases := append(geojsonLimitCases, limitCase{"feature bytes", Limits{MaxRecordBytes: 1000},
		geomiotest.FeatureJSONText(`{"s":"`+strings.Repeat("x", 2*decoderSlack)+`"}`, geomiotest.PolygonOf(5)),
		"more than 1000 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := geomiotest.WriteTemp(t, "parcels.geojson", `{"type":"FeatureCollection","features":[`+okFeature+`,`+tc.second+`]}`)
			for name, tu := range testTunings {
				r, err := openTuned(path, path, "parcels", 0, Options{Limits: tc.lim.WithDefaults()}, tu)
				require.NoError(t, err)
				fs, err := geomiotest.ReadAll(t, core.WithLimits(r, path, tc.lim.WithDefaults()))
				r.Close()
				require.Len(t, fs, 1, name)
				require.True(t, IsInputError(err), "%s: %v", name, err)
				require.True(t, IsLimitError(err), "%s: %v", name, err)
				require.Equal(t, path+`: layer "parcels", feature 1: `, err.Error()[:len(err.Error())-len(err.(*Error).Err.Error())], name)
				require.Contains(t, err.Error(), tc.want, name)
			}
			// Under the limits, the same file loads.
			_, fs, err := openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

func TestLimitsGeoJSONSingleFeature(t *testing.T) {
	t.Parallel()
	path := geomiotest.WriteTemp(t, "one.geojson", geomiotest.FeatureJSONText(`{}`, geomiotest.PolygonOf(6)))
	_, _, err := openAll(t, path, Options{Limits: Limits{MaxVertices: 5}})
	require.EqualError(t, err, path+`: layer "one", feature 0: more than 5 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`)
	path = geomiotest.WriteTemp(t, "one.geojson", geomiotest.FeatureJSONText(`{"s":"`+strings.Repeat("x", 2*decoderSlack)+`"}`, geomiotest.PolygonOf(5)))
	_, _, err = openAll(t, path, Options{Limits: Limits{MaxRecordBytes: 100}})
	require.ErrorContains(t, err, `layer "one", feature 0: more than 100 bytes in one feature`)
}

func TestLimitsGeoJSONSeq(t *testing.T) {
	t.Parallel()
	cases := append(geojsonLimitCases, limitCase{"feature bytes", Limits{MaxRecordBytes: 1000},
		geomiotest.FeatureJSONText(`{"s":"`+strings.Repeat("x", 1000)+`"}`, geomiotest.PolygonOf(5)),
		"more than 1000 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)"},
		limitCase{"vertices, bare geometry", Limits{MaxVertices: 5}, geomiotest.PolygonOf(6), "more than 5 vertices"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := geomiotest.WriteTemp(t, "parcels.geojsonl", okFeature+"\n"+tc.second+"\n")
			_, fs, err := openAll(t, path, Options{Limits: tc.lim})
			require.Len(t, fs, 1)
			require.True(t, IsLimitError(err), "%v", err)
			require.Contains(t, err.Error(), path+`: layer "parcels", feature 1: `+tc.want)
			_, fs, err = openAll(t, path, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 2)
		})
	}
}

// TestFastDecoderStopsAtLimits: the fast decoder stops parsing at the
// vertex after the limit (its buffer holds no more).
func TestFastDecoderStopsAtLimits(t *testing.T) {
	t.Parallel()
	d := fastDecoder{Lim: Limits{MaxVertices: 5}.WithDefaults()}
	_, _, ok := d.Feature([]byte(geomiotest.FeatureJSONText(`{}`, geomiotest.PolygonOf(1000))), false)
	require.False(t, ok)
	require.NotNil(t, d.Over)
	require.Equal(t, LimitVertices, d.Over.Limit)
	require.LessOrEqual(t, len(d.Flat), 12, "parsed past the limit")
	_, _, ok = d.Feature([]byte(geomiotest.FeatureJSONText(`{"a":1}`, geomiotest.PolygonOf(5))), false)
	require.True(t, ok)
	require.Nil(t, d.Over)
}

// TestSplitterBufferBounded: a buffer holding one unfinished feature
// grows no larger than the feature limit allows, nor than what is left of
// the file.
func TestSplitterBufferBounded(t *testing.T) {
	t.Parallel()
	in := input{Buf: make([]byte, 1000, 1000), Size: 1000, Limit: 3000}
	in.Grow(0)
	require.Equal(t, 3000, cap(in.Buf), "the buffer after this one would pass the limit")
	in = input{Buf: make([]byte, 1000, 1000), Size: 1000, FileSize: 1500}
	in.Grow(0)
	require.Equal(t, 1501, cap(in.Buf))
	in = input{Buf: make([]byte, 1000, 1000), Size: 1000}
	in.Grow(0)
	require.Equal(t, 4000, cap(in.Buf))
}

// TestLimitsGeoJSONTail: a member after the features array is bounded by
// the feature limit too, under every tuning as the reference reader.
func TestLimitsGeoJSONTail(t *testing.T) {
	t.Parallel()
	path := geomiotest.WriteTemp(t, "tail.geojson", `{"type":"FeatureCollection","features":[`+okFeature+`],"meta":"`+strings.Repeat("x", 3*decoderSlack)+`"}`)
	want := checkAllTunings(t, path, false, Options{Limits: Limits{MaxRecordBytes: 100}})
	require.EqualError(t, want.err, path+": upload: a member of more than 100 bytes after the features array, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)")
}
