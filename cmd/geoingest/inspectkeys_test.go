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

// TestInspectKeyIsTheMatchKey: inspect's --key is the source's key, as
// ingest's (it was the object key, so `inspect FILE --key APN` checked
// nothing): the job's parameters and key are ingest's, and each layer
// says how many features have a key, how many none, and how many share
// their value (normalised as the matching does: " a-1 " is A-1, "12" is
// 12). A key field in no feature is the refusal the first version would
// get (exit 1); the object key is --object-key.
func TestInspectKeyIsTheMatchKey(t *testing.T) {
	t.Parallel()
	const sq = `"geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]}`
	fc := `{"type":"FeatureCollection","features":[
	{"type":"Feature","properties":{"APN":"A-1"},` + sq + `},
	{"type":"Feature","properties":{"APN":" a-1 "},` + sq + `},
	{"type":"Feature","properties":{"APN":12},` + sq + `},
	{"type":"Feature","properties":{"APN":"12"},` + sq + `},
	{"type":"Feature","properties":{"APN":"B-7"},` + sq + `},
	{"type":"Feature","properties":{"APN":null},` + sq + `}]}`
	path := filepath.Join(t.TempDir(), "keyed.geojson")
	require.NoError(t, os.WriteFile(path, []byte(fc), 0o644))
	type report struct {
		Params map[string]any `json:"params"`
		Layers []struct {
			Key *struct {
				Fields        []string `json:"fields"`
				Keyed         int64    `json:"keyed"`
				Unkeyed       int64    `json:"unkeyed"`
				Duplicates    int64    `json:"duplicates"`
				FieldsMissing []string `json:"fields_missing"`
			} `json:"key"`
		} `json:"layers"`
		Refusal string `json:"refusal"`
	}
	code, out, errOut := run(t, nil, "inspect", "--json", "--key", "APN", path)
	require.Equal(t, 0, code, errOut)
	var r report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Equal(t, "APN", r.Params["key"])
	require.NotNil(t, r.Layers[0].Key, out)
	k := r.Layers[0].Key
	require.Equal(t, []string{"APN"}, k.Fields)
	require.EqualValues(t, 5, k.Keyed)
	require.EqualValues(t, 1, k.Unkeyed)
	require.EqualValues(t, 4, k.Duplicates)
	require.Empty(t, k.FieldsMissing)
	_, text, _ := run(t, nil, "inspect", "--key", "APN", path)
	require.Contains(t, text, "key       APN: 5 features with a key, 1 without")

	code, out, _ = run(t, nil, "inspect", "--json", "--key", "APNX", path)
	require.Equal(t, 1, code, out)
	r = report{}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Equal(t, []string{"APNX"}, r.Layers[0].Key.FieldsMissing)
	require.Contains(t, r.Refusal, `key field "APNX" is in no feature of layer "keyed"`)
	require.Contains(t, r.Refusal, "--object-key")
}

// TestInspectCandidateKeysAsMatched: a field whose values are the string
// "12" in one feature and the number 12 in another is no candidate key:
// the matching reads both as the key 12 (prepare.MatchKey, the server's
// geoingest_key_part), so they would be duplicates.
func TestInspectCandidateKeysAsMatched(t *testing.T) {
	t.Parallel()
	const sq = `"geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]}`
	fc := `{"type":"FeatureCollection","features":[
	{"type":"Feature","properties":{"PIN":"12","APN":"A-1"},` + sq + `},
	{"type":"Feature","properties":{"PIN":12,"APN":"A-2"},` + sq + `},
	{"type":"Feature","properties":{"PIN":13.0,"APN":"A-3"},` + sq + `}]}`
	path := filepath.Join(t.TempDir(), "mixed.geojson")
	require.NoError(t, os.WriteFile(path, []byte(fc), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--json", path)
	require.Equal(t, 0, code, errOut)
	var r struct {
		Layers []struct {
			Keys []string `json:"candidate_keys"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Equal(t, []string{"APN"}, r.Layers[0].Keys)
}
