package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestRepublishedShapefileReportsOnlyItsChange: a county's shapefile
// exported again by another tool, its features in another order, its
// numbers in other DBF widths and decimals (N(10,0) 1000 and N(19,11)
// 1000.00000000000), in EPSG:2249 with the ESRI .prj or the EPSG one,
// and one owner changed: the changelog is that one attribute change, and
// every feature keeps its feature_id, with the key and without
// (docs/changes.md, "Feature identity").
func TestRepublishedShapefileReportsOnlyItsChange(t *testing.T) {
	t.Parallel()
	requireGDALTool(t, "ogr2ogr")
	dir := t.TempDir()
	type feature struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Geometry   map[string]any `json:"geometry"`
	}
	fc := func(order []int, changed int) string {
		var fs []feature
		for _, i := range order {
			x, y := -71.06+float64(i%6)*0.001, 42.36+float64(i/6)*0.001
			owner := fmt.Sprintf("Owner %d", i)
			if i == changed {
				owner = "Changed"
			}
			fs = append(fs, feature{Type: "Feature",
				Properties: map[string]any{"PIN": 1000 + i, "PCODE": fmt.Sprintf("%06d", i*7), "OWNER": owner, "VAL": 12345.5 + float64(i)},
				Geometry:   map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{x, y}, {x + 0.0009, y}, {x + 0.0009, y + 0.0009}, {x, y + 0.0009}, {x, y}}}}})
		}
		b, err := json.Marshal(map[string]any{"type": "FeatureCollection", "features": fs})
		require.NoError(t, err)
		p := filepath.Join(dir, fmt.Sprintf("src%d.geojson", changed+1))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	var order, reversed []int
	for i := range 30 {
		order, reversed = append(order, i), append([]int{i}, reversed...)
	}
	v1, v2 := fc(order, -1), fc(reversed, 4)
	ogr := func(out, in, layer, sql string) {
		cmd := exec.Command("ogr2ogr", "-f", "ESRI Shapefile", "-t_srs", "EPSG:2249", out, in, "-nln", layer, "-sql", sql)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, string(b))
	}
	for _, epsgPrj := range []bool{false, true} {
		for _, key := range []string{"PIN", ""} {
			t.Run(fmt.Sprintf("epsgprj=%v,key=%q", epsgPrj, key), func(t *testing.T) {
				t.Parallel()
				db := pgtest.NewDB(t)
				env := map[string]string{"DATABASE_URL": db}
				vdir := t.TempDir()
				shp := filepath.Join(vdir, "county.shp")
				args := []string{"ingest", "--json", shp}
				if key != "" {
					args = append(args, "--key", key)
				}
				ogr(shp, v1, "county", "SELECT CAST(PIN AS integer(10)) AS PIN, PCODE, OWNER, CAST(VAL AS numeric(12,1)) AS VAL FROM src0")
				code, out, errOut := run(t, env, args...)
				require.Equal(t, 0, code, out+errOut)
				fids := func() string {
					conn, err := pgx.Connect(context.Background(), db)
					require.NoError(t, err)
					defer conn.Close(context.Background())
					var s string
					require.NoError(t, conn.QueryRow(context.Background(),
						`SELECT string_agg(feature_id::text, ',' ORDER BY feature_id) FROM geoingest_current_parcels`).Scan(&s))
					return s
				}
				first := fids()
				for _, ext := range []string{".shp", ".shx", ".dbf", ".prj", ".cpg"} {
					_ = os.Remove(filepath.Join(vdir, "county"+ext))
				}
				ogr(shp, v2, "county", "SELECT CAST(PIN AS numeric(19,11)) AS PIN, PCODE, OWNER, CAST(VAL AS numeric(24,15)) AS VAL FROM src5")
				if epsgPrj {
					// GDAL's WKT of the EPSG entry, where ogr2ogr wrote ESRI's.
					requireGDALTool(t, "gdalsrsinfo")
					prj, err := exec.Command("gdalsrsinfo", "-o", "wkt1", "EPSG:2249").Output()
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(filepath.Join(vdir, "county.prj"), prj, 0o644))
				}
				code, out, errOut = run(t, env, args...)
				require.Equal(t, 0, code, out+errOut)
				l := parseLines(t, out)[0]
				require.Equal(t, "written", l.Outcome, l.Error)
				require.NotNil(t, l.Changes)
				require.Equal(t, map[string]int64{"added": 0, "removed": 0, "geometry": 0, "attributes": 1, "unchanged": 29}, l.Changes.Counts)
				require.Equal(t, first, fids(), "every feature keeps its feature_id")
			})
		}
	}
}
