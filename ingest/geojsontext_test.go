package ingest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeoJSONIsAnObjectInJSON: a change record's extent is written as the
// geometry object, left out when empty, and read back from an object, a
// string holding one (records written before) or null.
func TestGeoJSONIsAnObjectInJSON(t *testing.T) {
	box := `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}`
	b, err := json.Marshal(Changes{Job: "j", BBox: GeoJSON(box)})
	require.NoError(t, err)
	require.Contains(t, string(b), `"bbox":`+box)
	b, err = json.Marshal(Changes{Job: "j"})
	require.NoError(t, err)
	require.NotContains(t, string(b), "bbox")
	b, err = json.Marshal(map[string]any{"geometry": GeoJSON("")})
	require.NoError(t, err)
	require.JSONEq(t, `{"geometry":null}`, string(b))

	for _, in := range []string{`{"bbox":` + box + `}`, `{"bbox": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}`,
		`{"bbox":` + string(mustJSON(t, box)) + `}`} {
		var c Changes
		require.NoError(t, json.Unmarshal([]byte(in), &c), in)
		require.Equal(t, GeoJSON(box), c.BBox, in)
	}
	var c Changes
	require.NoError(t, json.Unmarshal([]byte(`{"bbox":null}`), &c))
	require.Equal(t, GeoJSON(""), c.BBox)
	require.Error(t, json.Unmarshal([]byte(`{"bbox":[0,0,1,1]}`), &c))
	_, err = json.Marshal(Changes{BBox: "not json"})
	require.Error(t, err, "the encoder refuses text that is not JSON")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
