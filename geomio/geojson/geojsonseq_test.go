package geojson

import (
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

func TestGeoJSONSeq(t *testing.T) {
	t.Parallel()
	const f1 = `{"type":"Feature","properties":{"id":1},"geometry":` + sq + `}`
	const f2 = `{"type":"Feature","properties":{"id":2},"geometry":null}`
	for _, tc := range []struct {
		name, file, content string
		opts                Options
		wantN               int
		wantSRID            int
		wantErr             string
	}{
		{name: "ndjson", file: "a.geojsonl", content: f1 + "\n" + f2 + "\n", wantN: 2, wantSRID: 4326},
		{name: "crlf and blank lines", file: "a.ndjson", content: f1 + "\r\n\r\n  \n" + f2, wantN: 2, wantSRID: 4326},
		{name: "rfc 8142", file: "a.geojsons", content: "\x1e" + f1 + "\n\x1e" + f2 + "\n", wantN: 2, wantSRID: 4326},
		{name: "rs sniffed without extension", file: "a.json", content: "\x1e" + f1 + "\n\x1e" + f2 + "\n", wantN: 2, wantSRID: 4326},
		{name: "bare geometry records", file: "a.geojsonl", content: sq + "\n" + sq, wantN: 2, wantSRID: 4326},
		{name: "source srid", file: "a.geojsonl", content: `{"type":"Point","coordinates":[500000,6000000]}`, opts: Options{SourceSRID: 3006}, wantN: 1, wantSRID: 3006},
		{name: "projected without source srid", file: "a.geojsonl", content: `{"type":"Point","coordinates":[500000,6000000]}`, wantErr: "feature 0 at byte 0"},
		{name: "collection line", file: "a.geojsonl", content: f1 + "\n" + `{"type":"FeatureCollection","features":[]}`, wantErr: `feature 1 at byte ` + itoa(len(f1)+1) + `: unsupported record type "FeatureCollection"`},
		{name: "truncated", file: "a.geojsonl", content: f1 + "\n" + f2[:20], wantErr: "feature 1 at byte " + itoa(len(f1)+1) + ": invalid json"},
		{name: "record too large", file: "a.geojsonl", opts: Options{Limits: Limits{MaxRecordBytes: 100}}, content: f1 + "\n" + strings.Repeat(" ", 200) + f2, wantErr: `layer "a", feature 0: more than 100 bytes in one feature`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := geomiotest.WriteTemp(t, tc.file, tc.content)
			layer, fs, err := openAll(t, path, tc.opts)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.True(t, IsInputError(err), "%T %v", err, err)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, FormatGeoJSONSeq, layer.Format)
			require.Equal(t, tc.wantSRID, layer.SRID)
			require.Len(t, fs, tc.wantN)
			for i, f := range fs {
				require.Equal(t, int64(i), f.Index)
			}
			if tc.wantN == 2 && strings.Contains(tc.content, f1) {
				require.IsType(t, &geom.MultiPolygon{}, fs[0].Geom)
				require.Equal(t, `{"id":1}`, string(fs[0].Properties))
				require.Nil(t, fs[1].Geom)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
