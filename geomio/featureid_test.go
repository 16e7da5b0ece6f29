package geomio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFeatureIDMember: the Feature "id" member is Feature.ID on every
// GeoJSON path (the fast decoder, the reference decoder it falls back on,
// a single Feature, a sequence): a string or a number as written, nil for
// null, an object or no member.
func TestFeatureIDMember(t *testing.T) {
	const sq = `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`
	feats := []string{
		`{"type":"Feature","id":"A-1","properties":{"n":1},"geometry":` + sq + `}`,
		`{"type":"Feature","id": 42 ,"properties":{"n":2},"geometry":` + sq + `}`,
		`{"type":"Feature","properties":{"n":3},"geometry":` + sq + `}`,
		`{"type":"Feature","id":null,"properties":{"n":4},"geometry":` + sq + `}`,
		`{"type":"Feature","id":{"x":1},"properties":{"n":5},"geometry":` + sq + `}`,
		// the fast decoder declines a geometry with a bbox member: the reference path
		`{"type":"Feature","id":"B-6","properties":{"n":6},"geometry":{"type":"Polygon","bbox":[0,0,1,1],"coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}`,
		`{"type":"Feature","ID":"C-7","properties":{"n":7},"geometry":` + sq + `}`,
	}
	want := []string{`"A-1"`, `42`, ``, ``, ``, `"B-6"`, `"C-7"`}
	dir := t.TempDir()
	fc := `{"type":"FeatureCollection","features":[`
	seq := ""
	for i, f := range feats {
		if i > 0 {
			fc += ","
		}
		fc += f
		seq += f + "\n"
	}
	fc += "]}"
	files := map[string]string{"fc.geojson": fc, "seq.geojsonl": seq}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		r, err := Open(p, Options{})
		require.NoError(t, err)
		var got []string
		for r.Next() {
			got = append(got, string(r.Feature().ID))
		}
		require.NoError(t, r.Err(), name)
		require.NoError(t, r.Close())
		require.Equal(t, want, got, name)
	}
	p := filepath.Join(dir, "one.geojson")
	require.NoError(t, os.WriteFile(p, []byte(feats[0]), 0o644))
	r, err := Open(p, Options{})
	require.NoError(t, err)
	defer r.Close()
	require.True(t, r.Next(), r.Err())
	require.Equal(t, `"A-1"`, string(r.Feature().ID))
}
