package geojson

import (
	"fmt"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

func TestGeoJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, content string
		opts                Options
		wantSRID            int
		wantCRSText         string
		wantN               int
		wantErr             string // substring of the *Error; "" for none
		check               func(t *testing.T, fs []Feature)
	}{
		{name: "crs before features", file: "a.geojson",
			content:  `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::27700"}},"features":[{"type":"Feature","properties":{"a":1},"geometry":` + sq + `}]}`,
			wantSRID: 27700, wantCRSText: "urn:ogc:def:crs:EPSG::27700", wantN: 1},
		{name: "crs after features", file: "a.geojson",
			content:  `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"s":"}],\"crs\":"},"geometry":` + sq + `}],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}`,
			wantSRID: 3857, wantCRSText: "EPSG:3857", wantN: 1,
			check: func(t *testing.T, fs []Feature) { require.Equal(t, 3857, fs[0].Geom.SRID()) }},
		{name: "no crs is RFC 7946", file: "a.json",
			content:  `{"type":"FeatureCollection","features":[{"type":"Feature","properties":null,"geometry":` + sq + `},{"type":"Feature","geometry":null}]}`,
			wantSRID: 4326, wantN: 2,
			check: func(t *testing.T, fs []Feature) {
				require.Equal(t, "{}", string(fs[0].Properties))
				require.Equal(t, "{}", string(fs[1].Properties))
				require.Nil(t, fs[1].Geom)
				require.Equal(t, int64(1), fs[1].Index)
				mp, ok := fs[0].Geom.(*geom.MultiPolygon)
				require.True(t, ok, "polygon promoted to multipolygon, got %T", fs[0].Geom)
				require.Equal(t, 1, mp.NumPolygons())
				require.Equal(t, 4326, mp.SRID())
				require.Equal(t, "a", fs[0].Layer)
			}},
		{name: "CRS84", file: "a.geojson",
			content:  `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}},"features":[]}`,
			wantSRID: 4326, wantCRSText: "urn:ogc:def:crs:OGC:1.3:CRS84"},
		{name: "unknown crs is refused, not guessed", file: "a.geojson",
			content: `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:x:local"}},"features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[500000,6000000]}}]}`,
			wantErr: "give it as the source SRID"}, // geomio names no CLI flag: ingest words the hint (ingest.OptionHint)
		{name: "old EPSG form", file: "a.geojson",
			content:  `{"type":"FeatureCollection","crs":{"type":"EPSG","properties":{"code":2154}},"features":[]}`,
			wantSRID: 2154, wantCRSText: "EPSG:2154"},
		{name: "opengis URL", file: "a.geojson",
			content:  `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"http://www.opengis.net/def/crs/EPSG/0/3006"}},"features":[]}`,
			wantSRID: 3006, wantCRSText: "http://www.opengis.net/def/crs/EPSG/0/3006"},
		{name: "link crs is refused", file: "a.geojson",
			content: `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"http://example.com/crs/42","type":"proj4"}},"features":[]}`,
			wantErr: `crs member of type "link"`},
		{name: "custom crs without a registrar has srid 0", file: "a.geojson",
			content:  `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"+proj=robin +datum=WGS84 +type=crs"}},"features":[]}`,
			wantSRID: 0, wantCRSText: "+proj=robin +datum=WGS84 +type=crs"},
		{name: "custom crs registered", file: "a.geojson",
			content: `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"+proj=robin +datum=WGS84 +type=crs"}},"features":[]}`,
			opts: Options{RegisterCRS: func(c crs.CRS) (int, error) {
				if c.Method != crs.Custom || !strings.Contains(c.PROJString, "+proj=robin") {
					return 0, fmt.Errorf("not the custom robinson: %+v", c)
				}
				return 990001, nil
			}},
			wantSRID: 990001, wantCRSText: "+proj=robin +datum=WGS84 +type=crs"},
		{name: "source srid overrides", file: "a.geojson",
			content:  `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[631443.6,187400.6]}}]}`,
			opts:     Options{SourceSRID: 2227},
			wantSRID: 2227, wantN: 1},
		{name: "projected coordinates without crs fail", file: "a.geojson",
			content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[631443.6,187400.6]}}]}`,
			wantErr: "outside longitude/latitude range"},
		{name: "single feature", file: "a.geojson",
			content:  `{"properties": {"b" : [1, 2]}, "geometry":{"type":"MultiLineString","coordinates":[[[0,0,5],[1,1,6]],[]]},"type":"Feature"}`,
			wantSRID: 4326, wantN: 1,
			check: func(t *testing.T, fs []Feature) {
				require.Equal(t, `{"b":[1,2]}`, string(fs[0].Properties))
				mls := fs[0].Geom.(*geom.MultiLineString)
				require.Equal(t, geom.XY, mls.Layout(), "z dropped")
				require.Equal(t, 1, mls.NumLineStrings(), "empty part dropped")
			}},
		{name: "bare geometry", file: "a.geojson", content: "\xEF\xBB\xBF" + sq, wantSRID: 4326, wantN: 1,
			check: func(t *testing.T, fs []Feature) {
				require.IsType(t, &geom.MultiPolygon{}, fs[0].Geom)
				require.Equal(t, "{}", string(fs[0].Properties))
			}},
		{name: "empty geometry is nil", file: "a.geojson",
			content:  `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"MultiPolygon","coordinates":[]}},{"type":"Feature","properties":{},"geometry":{"type":"GeometryCollection","geometries":[]}}]}`,
			wantSRID: 4326, wantN: 2,
			check: func(t *testing.T, fs []Feature) { require.Nil(t, fs[0].Geom); require.Nil(t, fs[1].Geom) }},
		{name: "truncated", file: "a.geojson", content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":` + sq + `},{"type":"Feat`,
			wantErr: "feature 1"},
		{name: "features not array", file: "a.geojson", content: `{"type":"FeatureCollection","features":{}}`, wantErr: "features is not an array"},
		{name: "not a feature", file: "a.geojson", content: `{"type":"FeatureCollection","features":[{"type":"Point"}]}`, wantErr: "not Feature"},
		{name: "bad geometry", file: "a.geojson", content: `{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":"x"}}]}`, wantErr: "invalid geometry"},
		{name: "properties not object", file: "a.geojson", content: `{"type":"Feature","properties":[1],"geometry":null}`, wantErr: "properties is not an object"},
		{name: "trailing data", file: "a.geojson", content: `{"type":"FeatureCollection","features":[]} {}`, wantErr: "trailing data"},
		{name: "unknown type", file: "a.geojson", content: `{"type":"Topology"}`, wantErr: `unsupported geojson type "Topology"`},
		{name: "record too large", file: "a.geojson", opts: Options{Limits: Limits{MaxRecordBytes: 100}},
			content: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"s":"` + strings.Repeat("x", 70000) + `"},"geometry":null}]}`,
			wantErr: `layer "a", feature 0: more than 100 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := geomiotest.WriteTemp(t, tc.file, tc.content)
			layer, fs, err := openAll(t, path, tc.opts)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.True(t, IsInputError(err), "want *Error, got %T %v", err, err)
				require.Contains(t, err.Error(), tc.wantErr)
				require.Contains(t, err.Error(), path)
				return
			}
			require.NoError(t, err)
			require.Equal(t, FormatGeoJSON, layer.Format)
			require.Equal(t, tc.wantSRID, layer.SRID)
			require.Equal(t, tc.wantCRSText, layer.CRSText)
			require.Len(t, fs, tc.wantN)
			for i, f := range fs {
				require.Equal(t, int64(i), f.Index)
			}
			if tc.check != nil {
				tc.check(t, fs)
			}
		})
	}
}
