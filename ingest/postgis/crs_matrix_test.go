package postgis

import (
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/crs/crstest"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// requireGDAL skips the test when GDAL's command-line tools (gdal-bin, a
// test-only dependency) are missing, except in CI (CI=true), where their
// absence is a failure: scripts/setup.sh --test installs them.
func requireGDAL(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"gdalsrsinfo", "ogr2ogr"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found: GDAL (Debian: gdal-bin) is the oracle of this test; scripts/setup.sh --test installs it", tool)
			}
			t.Skipf("%s not found: install GDAL (Debian: apt-get install gdal-bin, or scripts/setup.sh --test) to run this test", tool)
		}
	}
}

// matrixCase is one CRS of the matrix: an EPSG CRS taken from PROJ's
// database, or a custom definition with no EPSG code.
type matrixCase struct {
	name string // "EPSG:2249" or the custom CRS's name
	srs  string // "EPSG:2249" or the custom CRS's .prj
	info crstest.Info
	prj  string // the .prj GDAL wrote: ESRI WKT, no authority codes
	xy   [][2]float64
	path string
	skip string // why it could not be made into a test case

	// Results.
	gdal4326  [][2]float64 // GDAL's transformation of xy to EPSG:4326
	gdalArea  float64
	outcome   ingest.Outcome
	err       string
	area      float64
	method    string
	epsg      int
	confident int
}

// selectMatrix picks CRSs from PROJ's EPSG list by a fixed rule, so that
// every kind is covered without a hand-made list: for each projection
// method, up to perMethod CRSs spread evenly over its codes; state planes
// and other CRSs in US survey feet; metric NAD83 state planes; and
// geographic 2D CRSs other than 4326. Deprecated CRSs are left out.
func selectMatrix(all []crstest.Info) []crstest.Info {
	const perMethod, ftUS, nad83m, geographic = 7, 24, 12, 45
	var live []crstest.Info
	for _, in := range all {
		if !in.Deprecated {
			live = append(live, in)
		}
	}
	sort.Slice(live, func(i, j int) bool { return codeNum(live[i].Code) < codeNum(live[j].Code) })
	spread := func(in []crstest.Info, n int) []crstest.Info {
		if len(in) <= n {
			return in
		}
		out := make([]crstest.Info, 0, n)
		for i := 0; i < n; i++ {
			out = append(out, in[i*len(in)/n])
		}
		return out
	}
	byMethod := map[string][]crstest.Info{}
	var methods []string
	var feet, metric, geog []crstest.Info
	for _, in := range live {
		switch {
		case !in.Projected:
			if in.Code != "4326" {
				geog = append(geog, in)
			}
		case strings.Contains(in.Name, "(ftUS)"):
			feet = append(feet, in)
		default:
			if strings.HasPrefix(in.Name, "NAD83 / ") && !strings.Contains(in.Name, "UTM") && !strings.Contains(in.Name, "(ft") {
				metric = append(metric, in)
			}
			if _, ok := byMethod[in.Method]; !ok {
				methods = append(methods, in.Method)
			}
			byMethod[in.Method] = append(byMethod[in.Method], in)
		}
	}
	sort.Strings(methods)
	seen := map[string]bool{}
	var out []crstest.Info
	add := func(ins []crstest.Info) {
		for _, in := range ins {
			if !seen[in.Code] {
				seen[in.Code] = true
				out = append(out, in)
			}
		}
	}
	for _, m := range methods {
		add(spread(byMethod[m], perMethod))
	}
	add(spread(feet, ftUS))
	add(spread(metric, nad83m))
	add(spread(geog, geographic))
	return out
}

func codeNum(s string) int { n, _ := strconv.Atoi(s); return n }

// customMatrix are projections with no EPSG code, as their .prj files come
// from ArcGIS: a Lambert conformal conic of a county's own, and the
// Robinson world map.
var customMatrix = []struct {
	name, prj string
	lon, lat  float64
}{
	{"custom LCC", `PROJCS["NAD_1983_Lambert_Conformal_Conic_County",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",1000000.0],PARAMETER["False_Northing",500000.0],PARAMETER["Central_Meridian",-98.25],PARAMETER["Standard_Parallel_1",38.1],PARAMETER["Standard_Parallel_2",39.9],PARAMETER["Latitude_Of_Origin",37.5],UNIT["Foot_US",0.3048006096012192]]`, -98.1, 38.9},
	{"World_Robinson", `PROJCS["World_Robinson",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Robinson"],PARAMETER["False_Easting",0.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",0.0],UNIT["Meter",1.0]]`, 12.5, 47.2},
}

// TestCRSMatrix is the CRS test matrix, with GDAL as the oracle. For
// about 230 EPSG CRSs of PROJ's database (every projection method, state
// planes in metres and in US survey feet, geographic CRSs other than 4326)
// and two custom projections, it writes a shapefile whose .prj is GDAL's
// ESRI WKT (gdalsrsinfo -o wkt_esri: no authority codes, as ArcGIS writes
// them) holding a hexagon in the CRS's area of use, and has GDAL transform
// them all to EPSG:4326 in one ogr2ogr run. Each one must then either land
// with GDAL's area within 0.01 %, or be refused as a ballpark transformation
// while GDAL's own output is the CRS's coordinates on its own datum,
// unshifted: GDAL did a ballpark too. It logs how many were identified,
// custom and refused.
func TestCRSMatrix(t *testing.T) {
	t.Parallel()
	requireGDAL(t)
	start := time.Now()
	all, err := crstest.EPSG()
	require.NoError(t, err)
	var cases []*matrixCase
	for _, in := range selectMatrix(all) {
		cases = append(cases, &matrixCase{name: "EPSG:" + in.Code, srs: "EPSG:" + in.Code, info: in})
	}
	for _, c := range customMatrix {
		cases = append(cases, &matrixCase{name: c.name, srs: c.prj,
			info: crstest.Info{West: c.lon - 0.5, East: c.lon + 0.5, South: c.lat - 0.5, North: c.lat + 0.5}})
	}
	if only := os.Getenv("GEOINGEST_CRS_MATRIX_ONLY"); only != "" {
		// Debugging some CRSs: GEOINGEST_CRS_MATRIX_ONLY=EPSG:2249,EPSG:3310.
		var one []*matrixCase
		for _, c := range cases {
			if strings.Contains(","+only+",", ","+c.name+",") {
				one = append(one, c)
			}
		}
		cases = one
	}
	require.NotEmpty(t, cases)

	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	parallel(cases, 4, placeMatrixCase)
	writeMatrixFiles(t, in, cases)
	made := time.Since(start)

	// GDAL transforms every layer of the directory to EPSG:4326 at once.
	cmd := exec.Command("ogr2ogr", "-f", "ESRI Shapefile", "-t_srs", "EPSG:4326", "-skipfailures", out, in)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "ogr2ogr: %s", msg)
	gdalDone := time.Since(start)
	gdalCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()

	b := setup(t)
	ctx := context.Background()
	t.Logf("matrix: %d files made in %s, GDAL's ogr2ogr run took %s (%s of CPU)", len(cases), made.Round(time.Millisecond), (gdalDone - made).Round(time.Millisecond), gdalCPU.Round(time.Millisecond))
	for _, c := range cases {
		if c.skip == "" {
			readGDAL(t, b, out, c)
		}
	}
	parallel(cases, 4, func(c *matrixCase) {
		if c.skip != "" {
			return
		}
		job := localJob(t, c.path, ingest.DefaultParams("parcels"))
		r := b.svc.Run(ctx, job)
		c.outcome, c.area = r.Outcome, r.AreaM2
		if r.Err != nil {
			c.err = r.Err.Error()
			return
		}
		var epsg, conf *int32
		_ = b.pool.QueryRow(ctx, `SELECT method, epsg, confidence FROM job_crs WHERE job_id = $1`, job.ID).Scan(&c.method, &epsg, &conf)
		if epsg != nil {
			c.epsg = int(*epsg)
		}
		if conf != nil {
			c.confident = int(*conf)
		}
	})

	counts := map[string]int{}
	var refused, custom, skipped []string
	for _, c := range cases {
		switch {
		case c.skip != "":
			counts["skipped"]++
			skipped = append(skipped, c.name+" ("+c.skip+")")
			continue
		case c.outcome == ingest.Written:
			counts[c.method]++
			if c.method == "custom" {
				custom = append(custom, c.name)
			}
			if c.gdal4326 == nil {
				t.Errorf("%s: geoingest wrote it (%s) but GDAL could not transform it; .prj %s", c.name, c.method, c.prj)
				continue
			}
			if math.Abs(c.area-c.gdalArea) > 1e-4*c.gdalArea {
				t.Errorf("%s (%s, %s EPSG:%d at %d %%): area %.3f m², GDAL %.3f m² (%+.5f %%)", c.name, c.info.Method, c.method, c.epsg, c.confident,
					c.area, c.gdalArea, 100*(c.area-c.gdalArea)/c.gdalArea)
			}
		case strings.Contains(c.err, "ballpark transformation"):
			counts["refused (ballpark)"]++
			refused = append(refused, c.name)
			require.Contains(t, c.err, "--source-srid", c.name)
			confirmBallpark(t, c)
		default:
			t.Errorf("%s (%s): %s: %s (polygon %v)", c.name, c.info.Method, c.outcome, c.err, c.xy)
		}
	}
	only := os.Getenv("GEOINGEST_CRS_MATRIX_ONLY")
	for _, c := range cases {
		if !strings.HasPrefix(c.name, "EPSG:") {
			require.Equal(t, "custom", c.method, "%s lands as a custom CRS", c.name)
		}
	}
	if tested := len(cases) - counts["skipped"]; only == "" {
		require.GreaterOrEqual(t, tested, 200, "CRSs tested: %v", skipped)
	}
	nEPSG := 0
	for _, c := range cases {
		if strings.HasPrefix(c.name, "EPSG:") {
			nEPSG++
		}
	}
	t.Logf("CRS matrix: %d CRSs (%d EPSG from PROJ's database, %d custom projections): %d identified, %d named by authority, %d custom, %d refused as ballpark, %d not testable; "+
		"files made in %s, GDAL oracle in %s, total %s",
		len(cases), nEPSG, len(cases)-nEPSG, counts["identified"], counts["authority"], counts["custom"], counts["refused (ballpark)"], counts["skipped"],
		made.Round(time.Second), (gdalDone - made).Round(time.Second), time.Since(start).Round(time.Second))
	t.Logf("custom: %s", strings.Join(custom, ", "))
	t.Logf("refused (ballpark, GDAL confirms): %s", strings.Join(refused, ", "))
	if len(skipped) > 0 {
		t.Logf("not testable: %s", strings.Join(skipped, "; "))
	}
}

// parallel runs fn on every case with n goroutines.
func parallel(cases []*matrixCase, n int, fn func(*matrixCase)) {
	ch := make(chan *matrixCase)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range ch {
				fn(c)
			}
		}()
	}
	for _, c := range cases {
		ch <- c
	}
	close(ch)
	wg.Wait()
}

// placeMatrixCase computes c's polygon: a hexagon about 10 km across
// (smaller for small areas of use) at the middle of the CRS's area of use,
// from longitudes and latitudes on the CRS's own datum.
func placeMatrixCase(c *matrixCase) {
	g, err := crstest.NewGeographic(c.srs)
	if err != nil {
		c.skip = err.Error()
		return
	}
	defer g.Close()
	in := c.info
	width := in.East - in.West
	if width < 0 {
		width += 360
	}
	lon0, lat0 := in.West+width/2, (in.South+in.North)/2
	if lon0 > 180 {
		lon0 -= 360
	}
	rLat := math.Min(0.045, (in.North-in.South)/4)
	rLon := math.Min(0.045/math.Max(math.Cos(lat0*math.Pi/180), 0.05), width/4)
	for k := 0; k <= 6; k++ {
		a := float64(k%6) * math.Pi / 3
		x, y, err := g.Forward(lon0+rLon*math.Cos(a), lat0+rLat*math.Sin(a))
		if err != nil {
			c.skip = err.Error()
			return
		}
		c.xy = append(c.xy, [2]float64{x, y})
	}
}

// writeMatrixFiles has GDAL write every case as a shapefile into dir, in
// one ogr2ogr run over an OGR VRT whose layers each read the case's polygon
// from a CSV of its own and give it the case's CRS: GDAL writes the .prj
// itself, as the ESRI WKT ArcGIS writes (no authority codes).
func writeMatrixFiles(t *testing.T, dir string, cases []*matrixCase) {
	work := t.TempDir()
	var vrt strings.Builder
	vrt.WriteString("<OGRVRTDataSource>\n")
	for _, c := range cases {
		if c.skip != "" {
			continue
		}
		var ring []string
		for _, p := range c.xy {
			ring = append(ring, strconv.FormatFloat(p[0], 'f', -1, 64)+" "+strconv.FormatFloat(p[1], 'f', -1, 64))
		}
		csv := filepath.Join(work, c.base()+".csv")
		require.NoError(t, os.WriteFile(csv, []byte(fmt.Sprintf("NAME,WKT\n%s,\"POLYGON((%s))\"\n", c.name, strings.Join(ring, ","))), 0o644))
		var srs strings.Builder
		require.NoError(t, xml.EscapeText(&srs, []byte(c.srs)))
		fmt.Fprintf(&vrt, `<OGRVRTLayer name="%s"><SrcDataSource>%s</SrcDataSource><GeometryType>wkbPolygon</GeometryType>`+
			`<LayerSRS>%s</LayerSRS><GeometryField encoding="WKT" field="WKT"/><Field name="NAME"/></OGRVRTLayer>`+"\n",
			c.base(), csv, srs.String())
	}
	vrt.WriteString("</OGRVRTDataSource>\n")
	require.NoError(t, os.WriteFile(filepath.Join(work, "cases.vrt"), []byte(vrt.String()), 0o644))
	out, err := exec.Command("ogr2ogr", "-f", "ESRI Shapefile", "-lco", "ENCODING=UTF-8", dir, filepath.Join(work, "cases.vrt")).CombinedOutput()
	require.NoError(t, err, "ogr2ogr: %s", out)
	for _, c := range cases {
		if c.skip != "" {
			continue
		}
		c.path = filepath.Join(dir, c.base()+".shp")
		prj, err := os.ReadFile(filepath.Join(dir, c.base()+".prj"))
		switch {
		case err != nil:
			c.skip = "GDAL wrote no .prj for it"
			continue
		case strings.Contains(string(prj), "AUTHORITY[") || strings.Contains(string(prj), ",ID["):
			// ESRI WKT has no such projection method (Guam, hyperbolic
			// Cassini-Soldner): GDAL falls back to OGC WKT, with codes.
			c.skip = "GDAL has no ESRI WKT for it"
			continue
		}
		c.prj = string(prj)
	}
}

// base is the case's file name without extension.
func (c *matrixCase) base() string {
	return strings.NewReplacer(":", "_", " ", "_").Replace(c.name)
}

// readGDAL reads GDAL's EPSG:4326 output for c, and its area on the
// spheroid as PostGIS computes it (the area geoingest records is computed
// the same way).
func readGDAL(t *testing.T, b *bundle, outDir string, c *matrixCase) {
	p := filepath.Join(outDir, c.base()+".shp")
	if _, err := os.Stat(p); err != nil {
		return // GDAL could not transform it
	}
	r, err := geomio.Open(p, geomio.Options{SourceSRID: 4326})
	require.NoError(t, err)
	defer r.Close()
	if !r.Next() {
		require.NoError(t, r.Err())
		return
	}
	mp, ok := r.Feature().Geom.(*geom.MultiPolygon)
	if !ok {
		return // GDAL could not transform it: it wrote a null geometry
	}
	flat := mp.FlatCoords()
	for i := 0; i+1 < len(flat); i += 2 {
		c.gdal4326 = append(c.gdal4326, [2]float64{flat[i], flat[i+1]})
	}
	data, err := wkb.Marshal(mp, wkb.NDR)
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT ST_Area(ST_SetSRID(ST_GeomFromWKB($1), 4326)::geography)`, data).Scan(&c.gdalArea))
}

// confirmBallpark checks GDAL's answer for a CRS geoingest refused as a
// ballpark: GDAL's EPSG:4326 coordinates are the CRS's own longitudes and
// latitudes, unshifted (within 1e-7 degrees, about a centimetre), that is,
// GDAL found no datum transformation either and silently applied none. The
// CRS is the EPSG CRS that geoingest (and GDAL's shapefile driver, by the
// same rule) identified, or the .prj itself.
func confirmBallpark(t *testing.T, c *matrixCase) {
	require.NotNil(t, c.gdal4326, "%s: refused as ballpark, but GDAL wrote nothing", c.name)
	srs := c.prj
	if r, _ := crs.Resolve(c.prj); r.EPSG != 0 {
		srs = fmt.Sprintf("EPSG:%d", r.EPSG)
	}
	g, err := crstest.NewGeographic(srs)
	require.NoError(t, err)
	defer g.Close()
	worst := 0.0
	for _, xy := range c.xy {
		lon, lat, err := g.Inverse(xy[0], xy[1])
		require.NoError(t, err)
		best := math.Inf(1)
		for _, q := range c.gdal4326 {
			best = math.Min(best, math.Hypot(q[0]-lon, q[1]-lat))
		}
		worst = math.Max(worst, best)
	}
	require.Less(t, worst, 1e-7, "%s: refused as ballpark, but GDAL shifted the coordinates by up to %g degrees: it knows a datum transformation", c.name, worst)
}
