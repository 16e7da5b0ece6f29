package ingest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

type jobKeyVector struct {
	Name            string          `json:"name"`
	Bucket          string          `json:"bucket"`
	RawKey          string          `json:"raw_key"`
	VersionToken    string          `json:"version_token"`
	Params          json.RawMessage `json:"params"`
	DecodedKey      string          `json:"decoded_key"`
	CanonicalParams string          `json:"canonical_params"`
	JobKey          string          `json:"job_key"`
}

func loadVectors(t *testing.T) []jobKeyVector {
	t.Helper()
	data, err := os.ReadFile("../testdata/jobkey_vectors.json")
	require.NoError(t, err)
	var vs []jobKeyVector
	require.NoError(t, json.Unmarshal(data, &vs))
	require.NotEmpty(t, vs)
	return vs
}

func TestJobKeyVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			params, err := ParseParams(v.Params)
			require.NoError(t, err)
			require.Equal(t, v.DecodedKey, UnquotePlus(v.RawKey))
			canon, err := CanonicalJSON(params)
			require.NoError(t, err)
			require.Equal(t, v.CanonicalParams, string(canon))
			key, err := JobKey(v.Bucket, v.RawKey, v.VersionToken, params)
			require.NoError(t, err)
			require.Equal(t, v.JobKey, key)
		})
	}
}

func TestUnquotePlus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a+b":        "a b",
		"a%2Bb":      "a+b",
		"100%25":     "100%",
		"bad%zz":     "bad%zz",
		"trail%2":    "trail%2",
		"%C3%89":     "É",
		"%FF":        "\uFFFD",
		"%E2%82x":    "\uFFFDx", // one replacement for the maximal subpart E2 82
		"%F0%9F%98":  "\uFFFD",
		"%ED%A0%80":  "\uFFFD\uFFFD\uFFFD", // surrogates are ill-formed
		"plain/key/": "plain/key/",
	} {
		require.Equal(t, want, UnquotePlus(in), in)
	}
}

func TestCanonicalJSONNumbersAndStrings(t *testing.T) {
	t.Parallel()
	// Expected values are what CPython 3.11 prints for
	// json.dumps(json.loads(in), sort_keys=True, separators=(",", ":")).
	for in, want := range map[string]string{
		`{"a":1.0}`:                      `{"a":1.0}`,
		`{"a":1e16}`:                     `{"a":1e+16}`,
		`{"a":1.5e-5}`:                   `{"a":1.5e-05}`,
		`{"a":0.0001}`:                   `{"a":0.0001}`,
		`{"a":123456789012345.6}`:        `{"a":123456789012345.6}`,
		`{"a":1e15}`:                     `{"a":1000000000000000.0}`,
		`{"a":-0.0}`:                     `{"a":-0.0}`,
		`{"a":12345678901234567890123}`:  `{"a":12345678901234567890123}`,
		`{"a":-0}`:                       `{"a":0}`,
		`{"b":"\u007f\u0001","a":"<&>"}`: `{"a":"<&>","b":"\u007f\u0001"}`,
		`{"é":1,"e":2,"z":3}`:            `{"e":2,"z":3,"\u00e9":1}`,
		`{"a":[true,false,null,{}]}`:     `{"a":[true,false,null,{}]}`,
	} {
		m, err := ParseParams([]byte(in))
		require.NoError(t, err, in)
		got, err := CanonicalJSON(m)
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	f.Add([]byte(`{"a":1.5,"b":[1,2,{"c":"\u00e9"}]}`))
	f.Add([]byte(`{"x":1e300,"y":-1e-300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseParams(data)
		if err != nil {
			return
		}
		c1, err := CanonicalJSON(m)
		if err != nil {
			return
		}
		// Canonical output is valid JSON and a fixed point.
		m2, err := ParseParams(c1)
		require.NoError(t, err)
		c2, err := CanonicalJSON(m2)
		require.NoError(t, err)
		require.Equal(t, string(c1), string(c2))
	})
}
