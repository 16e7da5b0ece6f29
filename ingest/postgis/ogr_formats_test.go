package postgis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// The corpus layers the GDAL formats are made from: one in EPSG:4326, one
// projected (British National Grid), one with an invalid polygon.
var ogrSources = []struct{ layer, path string }{
	{"counties", corpusDir + "/six_counties/six_counties.shp"},
	{"bristol", corpusDir + "/bristol_boundary_bng/boundary_bristol_bng.geojson"},
	{"yemen", corpusDir + "/yemen_invalid/ex1_yemen.json"},
}

// TestOGRFormatsAgainstGDAL makes every format read with GDAL from corpus
// layers with ogr2ogr, ingests each file with Service.Run into a real
// PostGIS, and compares every layer's count and SUM(ST_Area(geography))
// with GDAL's own load of the same file into the same PostGIS
// (ogr2ogr -t_srs EPSG:4326 -makevalid), within 0.01 %. A corrupt copy of
// each file fails as a permanent error that names the upload, recorded
// FAILED with nothing written. Beside one file per format, variants that
// publishers ship: a geodatabase zipped as its contents, a GeoPackage
// layer declared curved, GML 3.2 with URL srsNames, a QGIS-style CSV.
func TestOGRFormatsAgainstGDAL(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDAL(t)
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	pgURL := b.pool.Config().ConnString()
	multi := []string{"-nlt", "PROMOTE_TO_MULTI"}
	src := func(i int) string { return ogrSources[i].path }
	name := func(i int) string { return ogrSources[i].layer }

	for _, tc := range []struct {
		format   string
		file     string // the upload
		make     func(out string)
		srid     int // --source-srid (CSV has no CRS)
		layers   []string
		gdal     string   // what GDAL loads, when not the upload ("" for it; {} is the upload)
		gdalArgs []string // more options of GDAL's load
	}{
		{format: "gpkg", file: "all.gpkg", layers: []string{"counties", "bristol", "yemen"}, make: func(out string) {
			for i := range ogrSources {
				args := append(multi, "-f", "GPKG", out, src(i), "-nln", name(i))
				if i > 0 {
					args = append(args, "-update")
				}
				runOGR2OGR(t, args...)
			}
		}},
		{format: "gdb.zip", file: "all.gdb.zip", layers: []string{"counties", "bristol", "yemen"}, make: func(out string) {
			gdb := filepath.Join(dir, "all.gdb")
			for i := range ogrSources {
				args := append(multi, "-f", "OpenFileGDB", gdb, src(i), "-nln", name(i))
				if i > 0 {
					args = append(args, "-update")
				}
				runOGR2OGR(t, args...)
			}
			cmd := exec.Command("zip", "-qr", out, "all.gdb")
			cmd.Dir = dir
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "zip: %s", msg)
		}},
		{format: "fgb", file: "bristol.fgb", layers: []string{"bristol"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "FlatGeobuf", out, src(1), "-nln", "bristol")...)
		}},
		{format: "kml", file: "yemen.kml", layers: []string{"yemen"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "KML", out, src(2), "-nln", "yemen")...)
		}},
		{format: "kmz", file: "counties.kmz", layers: []string{"counties"}, make: func(out string) {
			// As GDAL's LIBKML writes a KMZ: a doc.kml that links to
			// layers/counties.kml.
			runOGR2OGR(t, append(multi, "-f", "LIBKML", out, src(0), "-nln", "counties")...)
		}},
		{format: "gml", file: "bristol.gml", layers: []string{"bristol"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "GML", "-dsco", "FORMAT=GML3", out, src(1), "-nln", "bristol")...)
		}},
		{format: "gml lat/long", file: "counties.gml", layers: []string{"counties"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "GML", "-dsco", "FORMAT=GML3", out, src(0), "-nln", "counties")...)
		}},
		{format: "gml lat/long no schema", file: "alone.gml", layers: []string{"alone"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "GML", "-dsco", "FORMAT=GML3", out, src(0), "-nln", "alone")...)
			require.NoError(t, os.Remove(strings.TrimSuffix(out, ".gml")+".xsd"))
		}},
		{format: "tab", file: "bristol.tab", layers: []string{"bristol"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "MapInfo File", out, src(1), "-nln", "bristol")...)
		}},
		{format: "mif", file: "counties.mif", layers: []string{"counties"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "MapInfo File", out, src(0), "-nln", "counties")...)
		}},
		{format: "csv", file: "counties.csv", srid: 4326, layers: []string{"counties"}, make: func(out string) {
			runOGR2OGR(t, "-f", "CSV", "-lco", "GEOMETRY=AS_WKT", out, src(0), "-nln", "counties")
		}},
		// Variants publishers ship (the robustness sweep of docs/inputs.md).
		{format: "gdb contents zip", file: "contents.gdb.zip", layers: []string{"counties", "bristol"}, make: func(out string) {
			// The geodatabase's files zipped without their folder.
			gdb := filepath.Join(dir, "contents.gdb")
			for i := range ogrSources[:2] {
				args := append(multi, "-f", "OpenFileGDB", gdb, src(i), "-nln", name(i))
				if i > 0 {
					args = append(args, "-update")
				}
				runOGR2OGR(t, args...)
			}
			cmd := exec.Command("zip", "-qr", out, ".")
			cmd.Dir = gdb
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "zip: %s", msg)
		}, gdal: "/vsizip/{}"},
		{format: "gpkg curvepolygon", file: "curved.gpkg", layers: []string{"curved"}, make: func(out string) {
			// A layer declared curved, its polygons stored as
			// CurvePolygons of straight segments.
			runOGR2OGR(t, "-f", "GPKG", out, src(0), "-nln", "curved", "-nlt", "CURVEPOLYGON", "-explodecollections")
		}, gdalArgs: []string{"-nlt", "MULTIPOLYGON"}},
		{format: "gml32 url", file: "urls.gml", layers: []string{"urls"}, make: func(out string) {
			runOGR2OGR(t, append(multi, "-f", "GML", "-dsco", "FORMAT=GML3.2", "-dsco", "SRSNAME_FORMAT=OGC_URL", out, src(0), "-nln", "urls")...)
		}},
		{format: "csv semicolons", file: "semi.csv", srid: 27700, layers: []string{"semi"}, make: func(out string) {
			// As QGIS's attribute table copies: a wkt_geom column,
			// semicolons, a UTF-8 BOM, CRLF.
			plain := filepath.Join(dir, "semi_plain.csv")
			runOGR2OGR(t, "-f", "CSV", "-lco", "GEOMETRY=AS_WKT", "-lco", "SEPARATOR=SEMICOLON", "-lco", "LINEFORMAT=CRLF", plain, src(1))
			b, err := os.ReadFile(plain)
			require.NoError(t, err)
			b = append([]byte("\xef\xbb\xbf"), strings.Replace(string(b), "WKT", "wkt_geom", 1)...)
			require.NoError(t, os.WriteFile(out, b, 0o644))
		}, gdal: "CSV:{}", gdalArgs: []string{"-oo", "GEOM_POSSIBLE_NAMES=wkt_geom", "-oo", "KEEP_GEOM_COLUMNS=NO"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out := filepath.Join(dir, tc.file)
			tc.make(out)

			// GDAL's own load, into a schema of its own.
			schema := "gdal_" + strings.NewReplacer(".", "_", " ", "_", "/", "_").Replace(tc.format)
			_, err := b.pool.Exec(ctx, "CREATE SCHEMA "+schema)
			require.NoError(t, err)
			args := []string{"-f", "PostgreSQL", "PG:" + pgURL, "-lco", "SCHEMA=" + schema, "-lco", "GEOMETRY_NAME=geom",
				"-t_srs", "EPSG:4326", "-makevalid", "-nlt", "PROMOTE_TO_MULTI", "--config", "PG_USE_COPY", "YES"}
			if tc.srid != 0 {
				args = append(args, "-s_srs", fmt.Sprintf("EPSG:%d", tc.srid))
			}
			gdalIn := out
			if strings.HasSuffix(out, ".zip") {
				gdalIn = "/vsizip/" + out + "/all.gdb"
			}
			if tc.gdal != "" {
				gdalIn = strings.ReplaceAll(tc.gdal, "{}", out)
			}
			args = append(args, tc.gdalArgs...)
			runOGR2OGR(t, append(args, gdalIn)...)

			p := ingest.DefaultParams("parcels")
			p.SourceSRID = tc.srid
			job := localJob(t, out, p)
			r := b.svc.Run(ctx, job)
			require.NoError(t, r.Err)
			require.Equal(t, ingest.Written, r.Outcome)

			var total int64
			for _, layer := range tc.layers {
				table := layer
				if tc.format == "mif" || tc.format == "tab" || strings.HasPrefix(tc.format, "csv") || tc.format == "fgb" || strings.HasPrefix(tc.format, "gml") || tc.format == "kml" {
					table = strings.TrimSuffix(tc.file, filepath.Ext(tc.file))
				}
				var wantN int64
				var wantArea float64
				require.NoError(t, b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(sum(ST_Area(geom::geography)), 0) FROM %s.%s
					WHERE NOT ST_IsEmpty(geom) AND GeometryType(geom) IN ('MULTIPOLYGON', 'POLYGON')`, schema, table)).Scan(&wantN, &wantArea))
				var gotN int64
				var gotArea float64
				require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(ST_Area(geom::geography)), 0) FROM parcels
					WHERE job_ref = geoingest_job_ref($1) AND layer = $2`, job.ID, layer).Scan(&gotN, &gotArea))
				require.Positive(t, wantN, "layer %s", layer)
				require.Equal(t, wantN, gotN, "layer %s: features as GDAL loads them", layer)
				require.InEpsilon(t, wantArea, gotArea, 1e-4, "layer %s: area as GDAL loads it, within 0.01 %%", layer)
				if strings.HasPrefix(tc.format, "gml") {
					// The axis order: the extent GDAL loads, to a micro-degree.
					var want, got [4]float64
					require.NoError(t, b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(geom) e FROM %s.%s) x`, schema, table)).Scan(&want[0], &want[1], &want[2], &want[3]))
					require.NoError(t, b.pool.QueryRow(ctx, `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(ST_Transform(geom, 4326)) e FROM parcels
						WHERE job_ref = geoingest_job_ref($1) AND layer = $2) x`, job.ID, layer).Scan(&got[0], &got[1], &got[2], &got[3]))
					for i := range want {
						require.InDelta(t, want[i], got[i], 1e-6, "layer %s: extent %v as GDAL loads it, got %v", layer, want, got)
					}
				}
				total += gotN
			}
			require.Equal(t, total, r.Features, "every feature is in one of the layers")

			// A corrupt copy fails cleanly, naming the upload.
			bad := corruptCopy(t, out)
			requireRefused(t, b, bad, p, "")
		})
	}
}

func runOGR2OGR(t *testing.T, args ...string) {
	t.Helper()
	msg, err := exec.Command("ogr2ogr", args...).CombinedOutput()
	require.NoError(t, err, "ogr2ogr %s: %s", strings.Join(args, " "), msg)
}

// corruptCopy copies path (and its MapInfo parts) under a new name with
// bytes in its middle overwritten, or truncated.
func corruptCopy(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	out := filepath.Join(dir, filepath.Base(path))
	// Keep the head (the format is still recognised), damage the rest.
	for i := len(data) / 4; i < len(data)*3/4; i++ {
		data[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(out, data, 0o644))
	stem := strings.TrimSuffix(path, filepath.Ext(path))
	for _, ext := range []string{".dat", ".map", ".id", ".mid", ".xsd"} {
		if b, err := os.ReadFile(stem + ext); err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(stem)+ext), b, 0o644))
		}
	}
	return out
}
