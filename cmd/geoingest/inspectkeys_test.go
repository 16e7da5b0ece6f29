package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInspectSuggestsKeys: inspect lists as candidate keys the fields
// present, non-empty and unique in every feature, normalised as a key is
// (" a-1 " and "A-1" are one value, 12.50 and 12.5 too), and @id when
// every Feature has a unique id member.
func TestInspectSuggestsKeys(t *testing.T) {
	t.Parallel()
	const sq = `"geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]}`
	fc := `{"type":"FeatureCollection","features":[
	{"type":"Feature","id":"f1","properties":{"APN":"A-1","use":"res","opt":1,"code":"x","num":12.5,"dup":" a-9 "},` + sq + `},
	{"type":"Feature","id":"f2","properties":{"APN":"A-2","use":"res","opt":2,"code":"y","num":13,"dup":"A-9"},` + sq + `},
	{"type":"Feature","id":"f3","properties":{"APN":"A-3","use":"com","code":"","num":12.50},` + sq + `},
	{"type":"Feature","id":"f4","properties":{"APN":"A-4","use":"com","opt":4,"code":"z","num":14},` + sq + `}]}`
	path := filepath.Join(t.TempDir(), "keys.geojson")
	require.NoError(t, os.WriteFile(path, []byte(fc), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--json", path)
	require.Equal(t, 0, code, errOut)
	var r struct {
		Layers []struct {
			Keys []string `json:"candidate_keys"`
			Of   int64    `json:"candidate_keys_of"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Equal(t, []string{"@id", "APN"}, r.Layers[0].Keys)
	require.EqualValues(t, 4, r.Layers[0].Of)
	_, text, _ := run(t, nil, "inspect", path)
	require.Contains(t, text, "keys      @id, APN")
}
