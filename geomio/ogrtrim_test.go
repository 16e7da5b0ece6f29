//go:build cgo && !geoingest_nogdal && linux

package geomio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/pagetrim"
	"github.com/stretchr/testify/require"
)

// libRSS is the resident kB of this process's mappings of the shared
// library whose file name begins with name.
func libRSS(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	total, on := 0, false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			on = len(f) >= 6 && strings.HasPrefix(filepath.Base(f[len(f)-1]), name)
			continue
		}
		if on && len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			total += n
		}
	}
	return total
}

// TestOGRAfterPageTrim: GDAL goes on reading, and reads the same, after
// the pages of libgdal and its libraries are given back (pagetrim), both
// when libgdal is loaded and in the middle of a layer. In a process of its
// own, so that other tests' GDAL calls do not touch libgdal meanwhile.
func TestOGRAfterPageTrim(t *testing.T) {
	if p := os.Getenv("GEOINGEST_TEST_TRIM"); p != "" {
		first, _, err := readOGR(t, p, Options{})
		require.NoError(t, err)
		require.NotEmpty(t, first)
		r, err := Open(p, Options{})
		require.NoError(t, err)
		defer r.Close()
		for i, want := range first {
			if i == len(first)/2 {
				before := libRSS(t, "libgdal")
				res, err := pagetrim.Trim()
				require.NoError(t, err)
				after := libRSS(t, "libgdal")
				t.Logf("libgdal: %d kB resident before the trim, %d kB after (%d kB given back in all)", before, after, res.Bytes>>10)
				require.Less(t, after, before, "libgdal's pages were not given back")
			}
			require.True(t, r.Next(), "feature %d: %v", i, r.Err())
			got := r.Feature()
			require.Equal(t, want.Index, got.Index)
			require.JSONEq(t, string(want.Properties), string(got.Properties))
			require.InEpsilon(t, planarArea([]Feature{want}), planarArea([]Feature{got}), 1e-12)
		}
		require.False(t, r.Next())
		require.NoError(t, r.Err())
		os.Stdout.WriteString("TRIMMED-AND-READ\n")
		return
	}
	requireOGR2OGR(t)
	t.Parallel()
	gpkg := filepath.Join(t.TempDir(), "c.gpkg")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, srcCounties)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestOGRAfterPageTrim$", "-test.v")
	cmd.Env = append(os.Environ(), "GEOINGEST_TEST_TRIM="+gpkg)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "TRIMMED-AND-READ\n")
	t.Logf("%s", out)
}
