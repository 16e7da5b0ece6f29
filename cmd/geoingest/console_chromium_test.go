package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath is the headless browser of the page test. In CI
// (CI=true) a missing browser fails the test: scripts/setup.sh --test
// installs Debian's chromium.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: scripts/setup.sh --test installs it (Debian package chromium)")
	}
	t.Skip("chromium not found (scripts/setup.sh --test installs it)")
	return ""
}

// runChromium runs headless Chromium on url with extra flags and returns
// its stdout. It gets 4 minutes: at the full suite's load on a slow VM a
// screenshot run outlasted 90 s and was killed, and the same test passed
// alone (TestConsole, 37 s with its fixture).
func runChromium(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium: %s", stderr.String())
	return stdout.Bytes()
}

// testConsoleChromium loads the console's page in headless Chromium over
// real jobs and two failed uploads: the DOM it builds shows the jobs, the
// failures with their reasons and what to do, and the <script> source
// key as text (no script element at all); the screenshot shows the
// page's styles and the area map (the map's palette colours are in it).
// GEOINGEST_UPDATE_SCREENSHOT=1 copies the screenshot to docs/console.png.
func testConsoleChromium(t *testing.T, f *consoleFixture, base string) {
	bin := chromiumPath(t)
	dom := string(runChromium(t, bin, base+"/", "--dump-dom", "--virtual-time-budget=5000"))
	require.Contains(t, dom, "geoingest console")
	require.NotContains(t, strings.ToLower(dom), "<script", "no script element: the source key is text")
	require.Contains(t, dom, "&lt;script&gt;alert(\"xss\")&lt;/script&gt;.geojson")
	require.Contains(t, dom, "invalid json")
	require.Contains(t, dom, "unknown CRS")
	require.Contains(t, dom, "source-srid")
	require.Contains(t, dom, f.epinay.JobID[:12])
	require.Contains(t, dom, "cadastre-91216-parcelles.json")
	require.Contains(t, dom, `<img class="map" src="/map.svg"`)

	shot := filepath.Join(t.TempDir(), "console.png")
	runChromium(t, bin, base+"/", "--screenshot="+shot, "--window-size=1280,1600", "--virtual-time-budget=5000")
	b, err := os.ReadFile(shot)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 1280, 1600), img.Bounds())
	// The failed badge's background (the page's CSS) and the map's
	// darkest class (YlGnBu #253494: the map was loaded and drawn).
	require.Greater(t, countColor(img, color.RGBA{0xff, 0xe3, 0xe3, 0xff}), 100, "failed badges")
	require.Greater(t, countColor(img, color.RGBA{0x25, 0x34, 0x94, 0xff}), 100, "the map's darkest class")
	if os.Getenv("GEOINGEST_UPDATE_SCREENSHOT") == "1" {
		require.NoError(t, os.WriteFile("../../docs/console.png", b, 0o644))
	}
	testConsoleVersionsChromium(t, f, base, bin)
}

// testConsoleVersionsChromium: a new version of the source whose key is
// an HTML element (its parcel moved, one added): its job page in
// headless Chromium shows the source's versions as a timeline with their
// counts, and the version's changes on a map, with the key as text; the
// screenshot shows the timeline's bars and the map's boxes.
func testConsoleVersionsChromium(t *testing.T, f *consoleFixture, base, bin string) {
	require.NoError(t, os.WriteFile(f.xssPath, []byte(`{"type":"FeatureCollection","features":[`+
		`{"type":"Feature","properties":{"name":"<b>bold</b>"},"geometry":{"type":"Polygon","coordinates":[[[13.00002,52.0],[13.00102,52.0],[13.00102,52.001],[13.00002,52.001],[13.00002,52.0]]]}},`+
		`{"type":"Feature","properties":{"name":"<i>new</i>"},"geometry":{"type":"Polygon","coordinates":[[[13.003,52.002],[13.004,52.002],[13.004,52.003],[13.003,52.003],[13.003,52.002]]]}}]}`), 0o644))
	code, out, errOut := run(t, f.env, "ingest", "--json", "--no-guards", f.xssPath)
	require.Equal(t, 0, code, errOut)
	v2 := parseLines(t, out)[0]
	require.Equal(t, "written", v2.Outcome)

	var rec struct {
		Features []struct {
			FeatureID int64  `json:"feature_id"`
			Kind      string `json:"kind"`
		} `json:"features"`
	}
	getJSON(t, base+"/api/jobs/"+v2.JobID+"/changes", 200, &rec)
	require.Len(t, rec.Features, 2)
	moved := int64(0)
	for _, c := range rec.Features {
		if c.Kind == "geometry" {
			moved = c.FeatureID
		}
	}
	require.NotZero(t, moved)

	page := base + "/jobs/" + v2.JobID
	dom := string(runChromium(t, bin, page, "--dump-dom", "--virtual-time-budget=5000"))
	require.NotContains(t, strings.ToLower(dom), "<script", "no script element: the source key is text")
	require.Contains(t, dom, "&lt;script&gt;alert(\"xss\")&lt;/script&gt;.geojson")
	require.Contains(t, dom, "Versions of this source")
	require.Contains(t, dom, `class="timeline"`)
	require.Contains(t, dom, f.xss.JobID[:12], "the first version in the timeline")
	require.Contains(t, dom, "1 added", "the second version's counts")
	require.Contains(t, dom, "1 geometry")
	require.Contains(t, dom, `class="changemap"`)
	require.Contains(t, dom, "feature "+strconv.FormatInt(moved, 10)+": geometry (before)")
	require.Contains(t, dom, `class="cm-added"`)

	shot := filepath.Join(t.TempDir(), "job.png")
	runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1280,2600", "--virtual-time-budget=5000")
	b, err := os.ReadFile(shot)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	require.Greater(t, countColor(img, color.RGBA{0x2e, 0x9e, 0x44, 0xff}), 50, "the timeline's added bar")
	require.Greater(t, countColor(img, color.RGBA{0xf2, 0x9b, 0x18, 0xff}), 50, "the timeline's geometry bar")
	require.Greater(t, countColor(img, color.RGBA{0x3c, 0xb0, 0x54, 0xff}), 1000, "the map's added box")
	require.Greater(t, countColor(img, color.RGBA{0xf5, 0xa6, 0x23, 0xff}), 1000, "the map's changed box")
}

// countColor counts the pixels of img within 2 levels of c.
func countColor(img image.Image, c color.RGBA) int {
	n := 0
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -2 && d <= 2 }
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, c.R) && near(pg, c.G) && near(pb, c.B) {
				n++
			}
		}
	}
	return n
}
