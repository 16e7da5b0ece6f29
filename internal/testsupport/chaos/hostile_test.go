package chaos

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
	"github.com/stretchr/testify/require"
)

// hostileCases are the hostile uploads of the chaos suite's hostile-upload
// fault, by internal/testsupport/hostile/corpus's names: a gzip bomb, a GML whose
// CRS is a URL on the listener, and a GeoPackage whose layer is an
// endless view (which the read limits stop).
var hostileCases = []string{"gml-gz-bomb", "gml-srsname-url", "gpkg-view-recursive-cte"}

// addHostile puts the hostile uploads into the plan, at random places
// after the steal targets and large objects, as bad objects: each must
// end FAILED and dead-lettered, having written nothing.
func addHostile(t *testing.T, plan []*object, rng *rand.Rand, addr string) []*object {
	t.Helper()
	env := corpus.Env{Addr: addr, Outside: filepath.Join(t.TempDir(), "outside")}
	require.NoError(t, os.MkdirAll(env.Outside, 0o755))
	_, tools := exec.LookPath("ogr2ogr")
	for _, c := range corpus.Cases() {
		want := false
		for _, n := range hostileCases {
			want = want || n == c.Name
		}
		if !want {
			continue
		}
		if tools != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("ogr2ogr not found: scripts/setup.sh --test installs gdal-bin")
			}
			if c.Name == "gpkg-view-recursive-cte" {
				continue
			}
		}
		dir := filepath.Join(t.TempDir(), c.Name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p, err := c.Write(dir, env)
		require.NoError(t, err, c.Name)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		ext := filepath.Ext(p)
		if ext == ".gz" {
			ext = filepath.Ext(p[:len(p)-3]) + ext
		}
		o := &object{key: "parcels/bad-hostile-" + c.Name + ext, version: 1, bad: "hostile " + c.Name, raw: b, slot: len(plan)}
		i := len(plan) - rng.IntN(len(plan)/2+1)
		plan = append(plan[:i], append([]*object{o}, plan[i:]...)...)
	}
	return plan
}
