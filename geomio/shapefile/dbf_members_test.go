package shapefile

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// TestDBFMembers: the members a shapefile's features say their
// properties have (Feature.Members) are where the properties have them:
// each key, JSON-quoted, then ':' and the value, in the fields' order,
// the values being the object's own.
func TestDBFMembers(t *testing.T) {
	cols := []geomiotest.DBFCol{{Name: "APN", Type: 'C', Length: 8}, {Name: "N", Type: 'N', Length: 12}, {Name: "D", Type: 'D', Length: 8},
		{Name: "L", Type: 'L', Length: 1}, {Name: `Q"`, Type: 'C', Length: 6}, {Name: "F", Type: 'F', Length: 10, Decimals: 3}}
	recs := [][]string{{"00042", "4000000000", "20240229", "T", `a"b\`, "1.500"}, {"", "", "", "?", "", ""}, {"x", "-7", "19991231", "F", "été", "-0.000"}}
	dir := t.TempDir()
	path := geomiotest.WriteSet(t, dir, "m", geomiotest.PolygonSHP(5, 5, 5), geomiotest.MakeDBF(0, cols, recs), map[string]string{".cpg": "UTF-8"})
	opts := Options{}
	opts.Limits = opts.Limits.WithDefaults()
	r, err := Open(path, "m", opts)
	require.NoError(t, err)
	defer r.Close()
	n := 0
	for r.Next() {
		f := r.Feature()
		require.Len(t, f.Members, 3*len(cols))
		var whole map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(f.Properties, &whole))
		for i := range cols {
			ks, vs, ve := f.Members[3*i], f.Members[3*i+1], f.Members[3*i+2]
			var key string
			require.NoError(t, json.Unmarshal(f.Properties[ks:vs-1], &key))
			require.Equal(t, cols[i].Name, key)
			require.Equal(t, byte(':'), f.Properties[vs-1])
			require.Contains(t, []byte{',', '}'}, f.Properties[ve])
			require.True(t, bytes.Equal(whole[key], f.Properties[vs:ve]), "%s: %s", key, f.Properties[vs:ve])
		}
		n++
	}
	require.NoError(t, r.Err())
	require.Equal(t, len(recs), n)
}
