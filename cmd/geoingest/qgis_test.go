package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// systemPython is Debian's Python, which python3-qgis installs into
// (a python3 earlier on PATH, pyenv's, lacks it).
const systemPython = "/usr/bin/python3"

// requireQGIS skips a test when Python's qgis module is missing (fails
// under CI, where scripts/setup.sh --test installs it).
func requireQGIS(t *testing.T) {
	t.Helper()
	if err := exec.Command(systemPython, "-c", "import qgis.core").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-qgis not found: scripts/setup.sh --test installs it")
		}
		t.Skip("python3-qgis not found: install it (Debian: apt-get install python3-qgis qgis-providers, or scripts/setup.sh --test) to run this test")
	}
}

// TestQGISSeesTheTypedView: Debian's QGIS (3.22), headless, connects to a
// database with parcels written under a typed-schema mapping and admin
// units: its layer list of the public schema holds parcels, admin_units,
// the current views and the typed view, and no storage table (those are
// only in geoingest_store); the typed view's fields have the schema's
// types (text, int8, numeric, boolean, date, timestamptz) and its values
// are the casts' (leading zeros, an int8 beyond float64; a numeric is a
// double in QGIS); a bounding-box
// request returns the one parcel inside it; it renders a PNG of the layer.
func TestQGISSeesTheTypedView(t *testing.T) {
	t.Parallel()
	requireQGIS(t)
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))
	code, out, errOut := run(t, env, "schema", "apply", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	own := map[string]string{"DATABASE_URL": db, "GEOINGEST_OWN_PARTITION_BYTES": "1"} // a partition of its own, in geoingest_store
	code, out, errOut = run(t, own, "ingest", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "ingest", "--target", "admin_units", synthAdmin)
	require.Equal(t, 0, code, out+errOut)

	cfg, err := pgx.ParseConfig(db)
	require.NoError(t, err)
	png := filepath.Join(dir, "typed.png")
	cmd := exec.CommandContext(context.Background(), systemPython, "testdata/qgis_check.py", png)
	cmd.Env = append(os.Environ(), "QT_QPA_PLATFORM=offscreen", "XDG_RUNTIME_DIR="+dir, "HOME="+dir,
		"PGHOST="+cfg.Host, fmt.Sprintf("PGPORT=%d", cfg.Port), "PGDATABASE="+cfg.Database, "PGUSER="+cfg.User, "PGPASSWORD="+cfg.Password)
	b, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, stderr)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var got struct {
		Layers        []string            `json:"layers"`
		StorageLayers []string            `json:"storage_layers"`
		Valid         bool                `json:"valid"`
		Count         int64               `json:"count"`
		Fields        map[string]string   `json:"fields"`
		CRS           string              `json:"crs"`
		APN           map[string][]string `json:"apn"`
		BBox          []int64             `json:"bbox"`
		Drawn         int                 `json:"drawn_pixels"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), string(b))
	t.Logf("QGIS: %s", lines[len(lines)-1])
	for _, l := range []string{"parcels", "admin_units", "geoingest_current_parcels", "geoingest_current_admin_units", "geoingest_typed_parcels"} {
		require.Contains(t, got.Layers, l)
	}
	for _, l := range got.Layers {
		require.False(t, storageLayer.MatchString(l), "storage table %s listed in public", l)
		require.NotEqual(t, "geoingest_quarantine", l)
	}
	require.NotEmpty(t, got.StorageLayers, "the job's own partition, in geoingest_store only")
	require.True(t, got.Valid)
	require.EqualValues(t, 3, got.Count)
	require.Equal(t, "EPSG:4326", got.CRS)
	for field, typ := range map[string]string{"apn": "text/10", "county": "text/10", "owner_id": "int8/4", "assessed": "numeric/6",
		"vacant": "bool/1", "sold_on": "date/14", "updated_at": "timestamptz/16"} {
		require.Equal(t, typ, got.Fields[field], "field %s: %v", field, got.Fields)
	}
	// QGIS reads a numeric field as a double: the view holds every digit
	// (TestTypedSchema), QGIS's value is the nearest double.
	require.Equal(t, []string{"0012-345", "9007199254740993", "123456789.12345679"}, got.APN["0"])
	require.Equal(t, []int64{0}, got.BBox)
	require.Greater(t, got.Drawn, 50, "the PNG shows the parcels")
	st, err := os.Stat(png)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(500))
}
