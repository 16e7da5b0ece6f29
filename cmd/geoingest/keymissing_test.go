package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestKeyInNoFeatureRefusesFirstVersion: a source's first version whose
// key (--key, a route's key=) names a field that no feature has (a typo:
// APNX for APN, @id on a shapefile) fails, naming the field, the layer
// and the fields it does have, and nothing of it is written; before,
// it landed with no feature keyed and the next version was held by the
// drift guard. With the right key the same file lands, and a version
// whose key some features lack (null, missing) still lands.
func TestKeyInNoFeatureRefusesFirstVersion(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	const sq = `"geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]}`
	fc := `{"type":"FeatureCollection","features":[
	{"type":"Feature","properties":{"APN":"A-1","use":"res"},` + sq + `},
	{"type":"Feature","properties":{"APN":null,"use":"com"},` + sq + `},
	{"type":"Feature","properties":{"use":"com"},` + sq + `}]}`
	path := filepath.Join(dir, "parcels.geojson")
	require.NoError(t, os.WriteFile(path, []byte(fc), 0o644))

	for _, key := range []string{"APNX", "use|APNX", "@id"} {
		code, out, errOut := run(t, env, "ingest", "--json", "--key", key, path)
		require.Equal(t, 1, code, "--key %s: %s %s", key, out, errOut)
		l := parseLines(t, out)[0]
		require.Equal(t, "failed", l.Outcome, key)
		missing := key
		if key == "use|APNX" {
			missing = "APNX"
		}
		for _, want := range []string{path, `key field "` + missing + `"`, `layer "parcels"`, "APN, use"} {
			require.Contains(t, l.Error, want, "--key %s", key)
		}
	}
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM parcels`))

	code, out, errOut := run(t, env, "ingest", "--json", "--key", "APN", path)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, "written", parseLines(t, out)[0].Outcome)
	require.EqualValues(t, 3, queryInt(t, db, `SELECT count(*) FROM parcels`))
}
