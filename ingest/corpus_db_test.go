package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracleDataset is one layer of testdata/corpus/oracle.json (GDAL 3.6 +
// PostGIS 3.3 ground truth).
type oracleDataset struct {
	ID               string              `json:"id"`
	Source           string              `json:"source"`
	SourceSRSEPSG    *int                `json:"source_srs_epsg"`
	AssumedSRS       *string             `json:"assumed_srs"`
	FeatureCount     int64               `json:"feature_count"`
	NullOrEmpty      int64               `json:"n_null_or_empty"`
	GeometryTypes    map[string]int64    `json:"pg_geometry_types"`
	AreaMakeValid    *float64            `json:"sum_area_geog_m2_makevalid"`
	NonASCIISamples  map[string][]string `json:"non_ascii_samples"`
	CoordsOutsideLL  any                 `json:"coords_outside_lonlat_range"`
	GDALGeometryType string              `json:"gdal_geometry_type"`
}

// corpusFailures are the datasets geoingest refuses on purpose, with the
// reason it must give. jackson_*: GeoJSON without a crs member whose
// coordinates are not longitude/latitude; GDAL assumes EPSG:4326 anyway
// (and reports areas the size of continents), geoingest does not guess.
// utm18_polygon_c_noprj: no .prj and projected coordinates; the oracle has
// no CRS for it either.
var corpusFailures = map[string]string{
	"jackson_city":          "outside longitude/latitude range",
	"jackson_county":        "outside longitude/latitude range",
	"utm18_polygon_c_noprj": "unknown CRS",
}

// corpusResult is one row of docs/corpus-results.md.
type corpusResult struct {
	id, format, crs, outcome string
	oracleN, gotN            int64
	oracleArea, gotArea      float64
}

// TestCorpusAgainstOracle ingests every dataset of the corpus into a real
// PostGIS and compares with the oracle: features written (polygons, after
// the default policies: nulls and non-polygons skipped and counted), area
// on the spheroid after ST_MakeValid within 0.01 %, non-ASCII attribute
// text; or the specific refusal. Files without a CRS fail as "unknown CRS"
// unless the source SRID is given, which is then what a user does.
func TestCorpusAgainstOracle(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../testdata/corpus/oracle.json")
	require.NoError(t, err)
	var oracle struct {
		Datasets []oracleDataset `json:"datasets"`
	}
	require.NoError(t, json.Unmarshal(data, &oracle))
	require.Len(t, oracle.Datasets, 32)
	b := setup(t)
	ctx := context.Background()

	var mu sync.Mutex
	var results []corpusResult
	for _, ds := range oracle.Datasets {
		t.Run(ds.ID, func(t *testing.T) {
			path := corpusPath(ds.Source)
			res := corpusResult{id: ds.ID, format: corpusFormat(path), crs: corpusCRS(ds)}
			res.oracleN = ds.GeometryTypes["ST_MultiPolygon"] + ds.GeometryTypes["ST_Polygon"]
			if ds.AreaMakeValid != nil {
				res.oracleArea = *ds.AreaMakeValid
			}
			defer func() {
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}()

			p := DefaultParams("parcels")
			if want, ok := corpusFailures[ds.ID]; ok {
				r := b.svc.Run(ctx, localJob(t, path, p))
				require.Equal(t, Failed, r.Outcome)
				require.Equal(t, Permanent, KindOf(r.Err))
				require.Contains(t, r.Err.Error(), want)
				require.Contains(t, r.Err.Error(), "file://")
				res.outcome = "refused: " + want
				return
			}
			if ds.AssumedSRS != nil {
				r := b.svc.Run(ctx, localJob(t, path, p))
				require.Equal(t, Failed, r.Outcome, "no CRS: geoingest must not guess")
				require.Contains(t, r.Err.Error(), "unknown CRS")
				require.Equal(t, "EPSG:4326", *ds.AssumedSRS)
				p.SourceSRID = 4326
			}
			job := localJob(t, path, p)
			r := b.svc.Run(ctx, job)
			require.NoError(t, r.Err)
			require.Equal(t, Written, r.Outcome)
			res.gotN, res.gotArea = r.Features, r.AreaM2
			res.outcome = "written"
			if p.SourceSRID != 0 {
				res.outcome = "written with --source-srid 4326"
			}
			require.Equal(t, res.oracleN, r.Features, "polygonal features")

			var rows int64
			var area float64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(ST_Area(geom::geography)), 0) FROM parcels WHERE job_id = $1`, job.ID).Scan(&rows, &area))
			require.Equal(t, r.Features, rows)
			require.InDelta(t, area, r.AreaM2, math.Max(area, 1)*1e-9, "ledger area = table area")
			if res.oracleArea > 0 {
				require.InEpsilon(t, res.oracleArea, area, 1e-4, "SUM(ST_Area(geog)) after ST_MakeValid within 0.01 %%")
			} else {
				require.Zero(t, area)
			}
			var skippedNull, skippedType int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT skipped_null, skipped_type FROM jobs WHERE job_id = $1`, job.ID).Scan(&skippedNull, &skippedType))
			require.Equal(t, ds.FeatureCount, r.Features+skippedNull+skippedType, "every feature is written or counted as skipped")

			// Non-ASCII text: every sample the oracle recorded that belongs to
			// a written (polygonal) feature is there byte for byte. GDAL
			// lower-cases column names; geoingest keeps the file's, so keys
			// compare case-insensitively.
			found := 0
			for key, samples := range ds.NonASCIISamples {
				for _, s := range samples {
					var n int64
					require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels p, jsonb_each_text(p.properties) kv
						WHERE p.job_id = $1 AND lower(kv.key) = lower($2) AND kv.value = $3`, job.ID, key, s).Scan(&n))
					if n > 0 {
						found++
					}
				}
			}
			if len(ds.NonASCIISamples) > 0 && rows > 0 {
				require.Positive(t, found, "non-ASCII samples %v", ds.NonASCIISamples)
				res.outcome += fmt.Sprintf("; %d non-ASCII samples found", found)
			}
		})
	}
	v, err := b.svc.Store.Verify(ctx)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
	if os.Getenv("GEOINGEST_WRITE_RESULTS") != "" {
		writeCorpusResults(t, results)
	}
}

func corpusPath(source string) string {
	s := strings.TrimPrefix(source, "/vsizip/")
	if i := strings.Index(strings.ToLower(s), ".zip"); i >= 0 {
		s = s[:i+4]
	}
	return filepath.Join("../testdata/corpus", s)
}

func corpusFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".zip":
		return "zipped shapefile"
	case ".shp":
		return "shapefile"
	default:
		return "GeoJSON"
	}
}

func corpusCRS(ds oracleDataset) string {
	switch {
	case ds.SourceSRSEPSG != nil:
		return fmt.Sprintf("EPSG:%d", *ds.SourceSRSEPSG)
	case ds.AssumedSRS != nil:
		return "none (lon/lat)"
	default:
		return "none"
	}
}

func writeCorpusResults(t *testing.T, results []corpusResult) {
	sort.Slice(results, func(i, j int) bool { return results[i].id < results[j].id })
	var b strings.Builder
	b.WriteString("# Corpus results\n\nWritten by `GEOINGEST_WRITE_RESULTS=1 go test ./ingest -run TestCorpusAgainstOracle`:\n")
	b.WriteString("every dataset of `testdata/corpus` ingested into `parcels` on a real PostGIS and compared with\n")
	b.WriteString("`oracle.json` (GDAL 3.6 + PostGIS 3.3). *Polygons* counts the oracle's polygonal features;\n")
	b.WriteString("points, lines and null geometries are skipped and counted on the job by default\n")
	b.WriteString("(`--wrong-type`, `--null-geometry`). Areas are `SUM(ST_Area(geom::geography))` in m², the\n")
	b.WriteString("oracle's after `ST_MakeValid`; the test requires them within 0.01 %.\n\n")
	b.WriteString("| dataset | format | CRS in file | polygons (oracle) | written | area m² (oracle) | area m² (geoingest) | diff | outcome |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		diff := "—"
		if r.oracleArea > 0 && r.gotArea > 0 {
			diff = fmt.Sprintf("%.5f %%", 100*(r.gotArea-r.oracleArea)/r.oracleArea)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.0f | %.0f | %s | %s |\n", r.id, r.format, r.crs, r.oracleN, r.gotN, r.oracleArea, r.gotArea, diff, r.outcome)
	}
	require.NoError(t, os.WriteFile("../docs/corpus-results.md", []byte(b.String()), 0o644))
}
