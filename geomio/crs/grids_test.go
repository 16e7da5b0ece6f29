//go:build cgo

package crs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMissingGridRefusal: when the accurate transformation needs a grid
// that is not installed and only a ballpark one is left, the refusal names
// the grid, its accuracy and how to install it (from PROJ's database, for
// any CRS). Debian's proj-data has neither grid.
func TestMissingGridRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, grid, accuracy string }{
		{"EPSG:2016", "ca_que_mern_cq77na83.tif", "1.5 m"}, // NAD27(CGQ77) / MTM zone 10
		{"EPSG:4608", "ca_nrc_MAY76V20.tif", "2 m"},        // NAD27(76)
	} {
		t.Run(tc.text, func(t *testing.T) {
			t.Parallel()
			c, err := Resolve(tc.text)
			var ie *InputError
			require.True(t, errors.As(err, &ie), "want *InputError, got %v", err)
			if c.Better == nil {
				t.Skipf("the grid %s is installed here: %v", tc.grid, err)
			}
			for _, want := range []string{"missing grid", tc.grid, tc.accuracy,
				"projsync --target-dir " + dataDirOf(t) + " --file " + tc.grid, "proj-bin",
				"download https://cdn.proj.org/" + tc.grid + " into it", "PROJ's data directory " + dataDirOf(t), "PROJ's proj-data archive", "database server", "give it as the source SRID", "ballpark"} {
				require.Contains(t, err.Error(), want)
			}
			require.NotContains(t, err.Error(), "PROJ knows no transformation")
			require.Equal(t, tc.grid, c.Better.Grids[0].ShortName)
		})
	}
}

// TestMissingGridBetter: with PROJ's grids taken away (a data directory
// holding proj.db alone), a CRS whose best transformation needs a grid
// Debian ships still resolves, on the less accurate transformation left,
// and says which grid would do better; with the grids, it says nothing.
func TestMissingGridBetter(t *testing.T) {
	c, err := Resolve("EPSG:4314") // DHDN: BETA2007 is in Debian's proj-data
	require.NoError(t, err)
	if c.Better != nil {
		t.Skipf("Debian's BETA2007 grid is not installed here: %v", c.Better)
	}
	db, err := os.ReadFile(filepath.Join(dataDirOf(t), "proj.db"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "proj.db"), db, 0o644))
	t.Setenv("PROJ_DATA", dir)
	t.Setenv("PROJ_LIB", dir)
	c2, err := Resolve("EPSG:4314")
	require.NoError(t, err)
	require.NotEqual(t, c.Transformation, c2.Transformation)
	require.NotNil(t, c2.Better)
	require.Equal(t, c.Transformation, c2.Better.Name, "the grid's transformation is the one PROJ uses when the grid is there")
	require.Contains(t, c2.Better.Grids[0].ShortName, "BETA2007")
	require.Equal(t, dir, c2.Better.DataDir)
	require.Contains(t, c2.Better.Fix(), "projsync --target-dir "+dir+" --file "+c2.Better.Grids[0].ShortName,
		"projsync's default directory is the user's, which a service running as another user does not read")
}

func dataDirOf(t *testing.T) string {
	p, err := newCtx()
	require.NoError(t, err)
	defer p.close()
	return p.dataDir()
}

// TestNoOperationRefusal: a CRS PROJ has no operation at all to WGS 84
// for, not even a ballpark one (another celestial body's), is refused
// saying so and why, in PROJ's words (it says why only in its log), and
// apart from the ballpark refusal.
func TestNoOperationRefusal(t *testing.T) {
	t.Parallel()
	_, err := Resolve("IAU_2015:49900") // Mars (2015) - Sphere / Ocentric
	var ie *InputError
	require.True(t, errors.As(err, &ie), "want *InputError, got %v", err)
	require.Contains(t, err.Error(), "not even a ballpark one")
	require.Contains(t, err.Error(), "celestial body")
	require.NotContains(t, err.Error(), "Unknown error")
	require.NotContains(t, err.Error(), "ballpark transformation:")
}

// TestMissingGridBetterGeneral: CRSs that land on a less accurate
// transformation name the grids of the better one, from PROJ's database,
// whatever the datum: several grids at once (Old Hawaiian), Australian,
// Spanish, US (NAD27's best is Canada's over its whole area) grids. None
// is in Debian's proj-data.
func TestMissingGridBetterGeneral(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text  string
		grids []string
	}{
		{"EPSG:4135", []string{"us_noaa_hawaii.tif", "us_noaa_hihpgn.tif"}}, // Old Hawaiian
		{"EPSG:4203", []string{"au_icsm_National_84_02_07_01.tif"}},         // AGD84
		{"EPSG:4230", []string{"es_ign_SPED2ETV2.tif"}},                     // ED50
		{"EPSG:26717", []string{"us_noaa_conus.tif"}},                       // NAD27 / UTM zone 17N
	} {
		c, err := Resolve(tc.text)
		require.NoError(t, err, tc.text)
		if c.Better == nil {
			t.Logf("%s: the grids are installed here (%s)", tc.text, c.Transformation)
			continue
		}
		var got []string
		for _, g := range c.Better.Grids {
			got = append(got, g.ShortName)
			require.Contains(t, c.Better.Fix(), "--file "+g.ShortName)
		}
		require.Equal(t, tc.grids, got, tc.text)
		require.Greater(t, c.Better.Accuracy, 0.0)
	}
}
