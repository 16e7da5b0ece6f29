package postgis

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// corpusDir is the corpus of real public datasets (see its SOURCES.md);
// oracle.json there is GDAL 3.6 + PostGIS 3.3 ground truth.
const corpusDir = "../../testdata/corpus"

// oracleDataset is one layer of oracle.json.
type oracleDataset struct {
	ID               string              `json:"id"`
	Source           string              `json:"source"`
	Layer            string              `json:"layer"`
	SourceSRSEPSG    *int                `json:"source_srs_epsg"`
	SourceSRSName    *string             `json:"source_srs_name"`
	AssumedSRS       *string             `json:"assumed_srs"`
	FeatureCount     int64               `json:"feature_count"`
	NullOrEmpty      int64               `json:"n_null_or_empty"`
	Invalid4326      *int64              `json:"n_invalid_4326"`
	GeometryTypes    map[string]int64    `json:"pg_geometry_types"`
	AreaMakeValid    *float64            `json:"sum_area_geog_m2_makevalid"`
	NonASCIISamples  map[string][]string `json:"non_ascii_samples"`
	CoordsOutsideLL  bool                `json:"coords_outside_lonlat_range"`
	GDALGeometryType string              `json:"gdal_geometry_type"`
}

type oracleFile struct {
	Datasets    []oracleDataset `json:"datasets"`
	AreaByAdmin []struct {
		Pair       string `json:"pair"`
		AdminTable string `json:"admin_table"`
	} `json:"area_by_admin"`
}

func loadCorpusOracle(t *testing.T) oracleFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "oracle.json"))
	require.NoError(t, err)
	var o oracleFile
	require.NoError(t, json.Unmarshal(data, &o))
	require.NotEmpty(t, o.Datasets)
	return o
}

// polygons is how many of the oracle's features are polygonal: what
// geoingest writes into a MultiPolygon table under the default policies
// (null and empty geometries skipped and counted, points and lines
// skipped and counted).
func (ds oracleDataset) polygons() int64 {
	return ds.GeometryTypes["ST_MultiPolygon"] + ds.GeometryTypes["ST_Polygon"]
}

// otherTypes counts the oracle's non-polygonal, non-null features.
func (ds oracleDataset) otherTypes() int64 {
	var n int64
	for typ, c := range ds.GeometryTypes {
		if typ != "ST_MultiPolygon" && typ != "ST_Polygon" && typ != "NULL" {
			n += c
		}
	}
	return n
}

// corpusExpectation is what geoingest must do with a dataset, derived from
// the oracle alone (no per-dataset list), so that a dataset added to the
// corpus is checked by the same rules:
//
//   - GDAL read it as EPSG:4326 but its coordinates are outside lon/lat
//     range (coords_outside_lonlat_range): a GeoJSON without a crs member
//     holding projected coordinates. GDAL and PostGIS accept it and report
//     areas the size of continents; geoingest refuses to guess.
//   - no polygonal feature at all (points, lines, an empty layer): the job
//     fails with "no polygonal features". Committing it would make an empty
//     generation that replaces the source's current parcels with nothing;
//     a wrong upload must be visible as a FAILED job, not as a quiet
//     success that skipped everything.
//   - no CRS and GDAL could not assume one (projected coordinates): unknown
//     CRS; only the uploader can say what it is.
//   - no CRS but lon/lat coordinates (assumed_srs): unknown CRS without
//     --source-srid, written with --source-srid 4326, which is what a user
//     who knows the data is lon/lat passes. geoingest never assumes it.
//   - otherwise written, and compared with the oracle.
type corpusExpectation struct {
	refuse     string // the specific reason in the error, when refused
	sourceSRID int    // --source-srid the user passes
}

func expectFor(ds oracleDataset) corpusExpectation {
	switch {
	case ds.CoordsOutsideLL && ds.SourceSRSEPSG != nil && *ds.SourceSRSEPSG == 4326:
		return corpusExpectation{refuse: "outside longitude/latitude range"}
	case ds.polygons() == 0:
		return corpusExpectation{refuse: "no polygonal features"}
	case ds.SourceSRSEPSG == nil && ds.SourceSRSName == nil && ds.AssumedSRS == nil:
		return corpusExpectation{refuse: "unknown CRS"}
	case ds.AssumedSRS != nil:
		var srid int
		_, err := fmt.Sscanf(*ds.AssumedSRS, "EPSG:%d", &srid)
		if err != nil {
			panic(fmt.Sprintf("%s: assumed_srs %q", ds.ID, *ds.AssumedSRS))
		}
		return corpusExpectation{sourceSRID: srid}
	}
	return corpusExpectation{}
}

// corpusTarget is the feature table a dataset belongs in: admin_units for
// the admin side of the oracle's area_by_admin pairs (its tables are named
// <dataset id>__<layer>), parcels for everything else.
func corpusTarget(o oracleFile, ds oracleDataset) string {
	for _, p := range o.AreaByAdmin {
		if strings.HasPrefix(p.AdminTable, ds.ID+"__") {
			return "admin_units"
		}
	}
	return "parcels"
}

// corpusResult is one row of the corpus table in docs/inputs.md.
type corpusResult struct {
	id, format, target, oracleCRS, foundCRS, outcome string
	oracleN, gotN                                    int64
	oracleArea, gotArea                              float64
	hasArea                                          bool
}

// TestCorpusOracle ingests every layer of the corpus with Service.Run into
// a real PostGIS and compares with the oracle: the polygonal feature count
// (after the default policies: nulls and non-polygons skipped and counted
// on the job), SUM(ST_Area(geom::geography)) of the written rows against
// the oracle's area after ST_MakeValid within 0.01 %, the ledger's count
// and area against the table's, and the oracle's non-ASCII attribute
// samples byte for byte; or the specific refusal (see expectFor), recorded
// as a FAILED claim with nothing written. With GEOINGEST_WRITE_RESULTS=1 it
// writes the corpus table into docs/inputs.md (between its corpus-results
// markers).
func TestCorpusOracle(t *testing.T) {
	t.Parallel()
	o := loadCorpusOracle(t)
	b := setup(t)
	ctx := context.Background()

	golden := loadV4Golden(t)
	var mu sync.Mutex
	var results []corpusResult
	for i, ds := range o.Datasets {
		t.Run(ds.ID, func(t *testing.T) {
			// Every other dataset gets a partition of its own, the rest go
			// to the shared partition: both write paths see the corpus.
			b.store.OwnPartitionBytes = 1
			if i%2 == 1 {
				b.store.OwnPartitionBytes = 1 << 40
			}
			path := corpusPath(ds.Source)
			exp := expectFor(ds)
			p := ingest.DefaultParams(corpusTarget(o, ds))
			res := corpusResult{id: ds.ID, format: corpusFormat(path), target: p.Target,
				oracleCRS: corpusCRS(ds), oracleN: ds.polygons(), foundCRS: "—"}
			if ds.AreaMakeValid != nil {
				res.oracleArea, res.hasArea = *ds.AreaMakeValid, true
			}
			defer func() {
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}()

			// What the reader finds: the CRS, and where the oracle's
			// non-ASCII samples are (on polygons, which are written, or
			// on points and lines, which are not).
			scan := scanCorpus(t, b.store, path, exp.sourceSRID, ds)
			res.foundCRS = scan.crs

			if exp.refuse != "" {
				requireRefused(t, b, path, p, exp.refuse)
				res.outcome = "refused: " + exp.refuse
				res.gotArea = 0
				return
			}
			if exp.sourceSRID != 0 {
				// geoingest does not guess: without --source-srid the same
				// upload fails, and says what to do.
				msg := requireRefused(t, b, path, p, "unknown CRS")
				require.Contains(t, msg, "--source-srid")
				p.SourceSRID = exp.sourceSRID
			}
			job := localJob(t, path, p)
			r := b.svc.Run(ctx, job)
			require.NoError(t, r.Err)
			require.Equal(t, ingest.Written, r.Outcome)
			res.gotN, res.gotArea = r.Features, r.AreaM2
			res.outcome = "written"
			if p.SourceSRID != 0 {
				res.outcome = fmt.Sprintf("written with --source-srid %d (unknown CRS without)", p.SourceSRID)
			}
			require.Equal(t, ds.polygons(), r.Features, "polygonal features")
			requireSameAsV4(t, b, golden, ds.ID, job)

			// The table, the ledger and the oracle agree.
			var rows int64
			var area float64
			require.NoError(t, b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(sum(ST_Area(geom::geography)), 0) FROM %s WHERE job_ref = geoingest_job_ref($1)`, p.Target), job.ID).Scan(&rows, &area))
			require.Equal(t, r.Features, rows)
			res.gotArea = area
			var ledgerN, skippedNull, skippedType, repaired int64
			var ledgerArea float64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT feature_count, total_area_m2, skipped_null, skipped_type, repaired_invalid FROM jobs WHERE job_id = $1`, job.ID).Scan(&ledgerN, &ledgerArea, &skippedNull, &skippedType, &repaired))
			require.Equal(t, rows, ledgerN, "ledger feature_count = table rows")
			require.True(t, areaSumWithin(ledgerArea, area, rows), "ledger total_area_m2 %.17g = SUM(ST_Area(geom::geography)) %.17g, to within geodesic's tolerance", ledgerArea, area)
			require.InEpsilon(t, res.oracleArea, area, 1e-4, "SUM(ST_Area(geog)) vs the oracle's after ST_MakeValid: within 0.01 %%")
			require.Equal(t, ds.NullOrEmpty, skippedNull, "null or empty geometries skipped and counted")
			require.Equal(t, ds.otherTypes(), skippedType, "points and lines skipped and counted")
			require.Equal(t, ds.FeatureCount, r.Features+skippedNull+skippedType, "every feature is written or counted as skipped")

			// Repair happens after the transform to 4326, as the oracle's
			// ST_MakeValid on the reprojected table: the same features are
			// invalid, and with --invalid fail the job is refused instead.
			require.NotNil(t, ds.Invalid4326)
			require.Equal(t, *ds.Invalid4326, repaired, "features repaired with ST_MakeValid = the oracle's invalid after reprojection")
			if repaired > 0 {
				res.outcome += fmt.Sprintf("; %d repaired", repaired)
				pf := p
				pf.Invalid = ingest.PolicyFail
				requireRefused(t, b, path, pf, "invalid geometry")
			}

			// The samples on polygons are in the table, byte for byte
			// (GDAL's PG driver lower-cases column names; geoingest keeps
			// the file's, so keys compare case-insensitively).
			for _, s := range scan.onPolygons {
				var n int64
				require.NoError(t, b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s p, jsonb_each_text(p.properties) kv
					WHERE p.job_ref = geoingest_job_ref($1) AND lower(kv.key) = lower($2) AND kv.value = $3`, p.Target), job.ID, s[0], s[1]).Scan(&n))
				require.Positive(t, n, "non-ASCII sample %s=%q written", s[0], s[1])
			}
			if len(scan.onPolygons) > 0 {
				res.outcome += fmt.Sprintf("; %d non-ASCII samples in the table", len(scan.onPolygons))
			}
		})
	}
	v, err := b.store.Verify(ctx)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
	if os.Getenv("GEOINGEST_WRITE_RESULTS") != "" && !t.Failed() {
		writeCorpusResults(t, results)
	}
}

// v4Golden is what the version-4 write path (staging table, then
// geoingest_normalize into the target; migration 0001) wrote for a corpus
// dataset: testdata/corpus_v4_golden.json, recorded before migration 0005.
type v4Golden struct {
	AreaM2      float64 `json:"area_m2"`
	Features    int64   `json:"features"`
	MD5Checksum string  `json:"md5_checksum"`
	Repaired    int64   `json:"repaired"`
	Target      string  `json:"target"`
}

func loadV4Golden(t *testing.T) map[string]v4Golden {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus_v4_golden.json")
	require.NoError(t, err)
	var g map[string]v4Golden
	require.NoError(t, json.Unmarshal(data, &g))
	return g
}

// requireSameAsV4 requires the job's rows to be those the version-4 write
// path wrote for the dataset: the same count and repairs, the same area
// within 1e-9, and the same geoingest_feature_hash checksum (md5 of every
// row's index, properties and EWKB geometry), so the same rows byte for
// byte.
func requireSameAsV4(t *testing.T, b *bundle, golden map[string]v4Golden, id string, job ingest.Job) {
	t.Helper()
	want, ok := golden[id]
	require.True(t, ok, "no version-4 result for %s in testdata/corpus_v4_golden.json", id)
	var n, repaired int64
	var area float64
	var md5sum string
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT j.feature_count, j.total_area_m2, j.repaired_invalid,
		       (SELECT coalesce(sum(geoingest_feature_hash(f.feature_index, f.properties, f.geom)), 0)::text
		        FROM geoingest_features f WHERE f.target_table = j.target_table AND f.job_ref = j.job_ref)
		FROM jobs j WHERE j.job_id = $1`, job.ID).Scan(&n, &area, &repaired, &md5sum))
	require.Equal(t, want.Features, n, "features as version 4")
	require.Equal(t, want.Repaired, repaired, "repaired as version 4")
	require.True(t, areaSumWithin(area, want.AreaM2, n), "area %.17g as version 4's %.17g (ST_Area's), to within geodesic's tolerance", area, want.AreaM2)
	require.Equal(t, want.MD5Checksum, md5sum, "rows (index, properties, geometry) as version 4")
}

// corpusScan is what reading a dataset with geomio shows.
type corpusScan struct {
	crs        string      // "EPSG:n", "none", or the reader's refusal
	onPolygons [][2]string // oracle samples (key, value) found on polygonal features
}

// scanCorpus reads path as the service would and checks that every
// non-ASCII sample the oracle recorded is decoded byte for byte, on any
// feature (points and lines included: their text must be right even
// though parcels does not take them).
func scanCorpus(t *testing.T, store *Store, path string, srid int, ds oracleDataset) corpusScan {
	t.Helper()
	var out corpusScan
	r, err := geomio.Open(path, geomio.Options{SourceSRID: srid, RegisterCRS: store.RegisterCRS})
	if err != nil {
		out.crs = "refused by reader"
		require.Empty(t, ds.NonASCIISamples, "samples cannot be checked: %v", err)
		return out
	}
	defer r.Close()
	found := map[[2]string]bool{}
	onPoly := map[[2]string]bool{}
	for r.Next() {
		f := r.Feature()
		var props map[string]any
		require.NoError(t, json.Unmarshal(f.Properties, &props))
		_, poly := f.Geom.(*geom.MultiPolygon)
		if _, ok := f.Geom.(*geom.Polygon); ok {
			poly = true
		}
		for key, samples := range ds.NonASCIISamples {
			for k, v := range props {
				if !strings.EqualFold(k, key) {
					continue
				}
				s, _ := v.(string)
				for _, want := range samples {
					if s == want {
						found[[2]string{key, want}] = true
						if poly {
							onPoly[[2]string{key, want}] = true
						}
					}
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		out.crs = "refused by reader"
		require.Empty(t, ds.NonASCIISamples, "samples cannot be checked: %v", err)
		return out
	}
	out.crs = "none"
	if l := r.Layer(); l.SRID != 0 {
		out.crs = fmt.Sprintf("EPSG:%d", l.SRID)
		if l.CRS.Method == crs.Identified || l.CRS.Method == crs.Authority || l.CRS.Method == crs.Custom {
			out.crs = l.CRS.String() // how PROJ resolved it
		}
		if srid != 0 {
			out.crs = fmt.Sprintf("none; EPSG:%d given", l.SRID)
		}
		if l.Encoding != "" && l.Format == geomio.FormatShapefile {
			out.crs += ", " + l.Encoding
		}
	}
	for key, samples := range ds.NonASCIISamples {
		for _, want := range samples {
			require.True(t, found[[2]string{key, want}], "oracle's non-ASCII sample %s=%q not read byte for byte", key, want)
		}
	}
	for s := range onPoly {
		out.onPolygons = append(out.onPolygons, s)
	}
	sort.Slice(out.onPolygons, func(i, j int) bool {
		return out.onPolygons[i][0]+out.onPolygons[i][1] < out.onPolygons[j][0]+out.onPolygons[j][1]
	})
	return out
}

// requireRefused runs path as a job and requires a permanent failure whose
// message names the upload and gives reason; the claim is FAILED with that
// message and nothing was written: no ledger row, no features.
func requireRefused(t *testing.T, b *bundle, path string, p ingest.Params, reason string) string {
	t.Helper()
	ctx := context.Background()
	job := localJob(t, path, p)
	r := b.svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, r.Outcome)
	require.Error(t, r.Err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(r.Err), "%v", r.Err)
	msg := r.Err.Error()
	require.Contains(t, msg, reason)
	require.Contains(t, msg, job.Source.String(), "the message names the upload")
	require.NotContains(t, msg, "geoingest-job-", "the message names the upload, not the temporary download")
	var state, lastErr string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT state, coalesce(last_error, '') FROM claims WHERE job_id = $1`, job.ID).Scan(&state, &lastErr))
	require.Equal(t, "FAILED", state)
	require.Equal(t, msg, lastErr, "the claim records the reason an operator reads")
	var n int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs WHERE job_id = $1)
		+ (SELECT count(*) FROM parcels WHERE job_ref = geoingest_job_ref($1)) + (SELECT count(*) FROM admin_units WHERE job_ref = geoingest_job_ref($1))`, job.ID).Scan(&n))
	require.Zero(t, n, "a refused job writes no ledger row and no features")
	return msg
}

// TestCorpusMultiLayerZip: a zip holding several shapefile layers, in
// sub-folders, with upper- and mixed-case extensions and different CRSs,
// is one job whose rows record their layer; each layer is reprojected from
// its own CRS, so the area is the sum of the layers' oracle areas.
func TestCorpusMultiLayerZip(t *testing.T) {
	t.Parallel()
	o := loadCorpusOracle(t)
	byID := map[string]oracleDataset{}
	for _, ds := range o.Datasets {
		byID[ds.ID] = ds
	}
	zipPath := filepath.Join(t.TempDir(), "layers.zip")
	f, err := os.Create(zipPath)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	add := func(src, name string) {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	for _, ext := range []string{"shp", "shx", "dbf", "prj"} {
		add(filepath.Join(corpusDir, "six_counties/six_counties."+ext), "Export/Counties/six_counties."+strings.ToUpper(ext))
		add(filepath.Join(corpusDir, "utm18_polygon_a/a_utm."+ext), "Export/utm/a_utm."+strings.ToUpper(ext[:1])+ext[1:])
		add(filepath.Join(corpusDir, "two_states_mercator/two_states_mercator."+ext), "two_states_mercator."+ext)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())

	b := setup(t)
	ctx := context.Background()
	job := localJob(t, zipPath, ingest.DefaultParams("parcels"))
	r := b.svc.Run(ctx, job)
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Written, r.Outcome)
	var wantN int64
	var wantArea float64
	for _, id := range []string{"six_counties", "utm18_polygon_a", "two_states_mercator"} {
		wantN += byID[id].polygons()
		wantArea += *byID[id].AreaMakeValid
	}
	require.Equal(t, wantN, r.Features)
	var area float64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT sum(ST_Area(geom::geography)) FROM parcels WHERE job_ref = geoingest_job_ref($1)`, job.ID).Scan(&area))
	require.InEpsilon(t, wantArea, area, 1e-4)
	rows, err := b.pool.Query(ctx, `SELECT layer, count(*) FROM parcels WHERE job_ref = geoingest_job_ref($1) GROUP BY layer ORDER BY layer`, job.ID)
	require.NoError(t, err)
	got := map[string]int64{}
	for rows.Next() {
		var layer string
		var n int64
		require.NoError(t, rows.Scan(&layer, &n))
		got[layer] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int64{
		"Export/Counties/six_counties": byID["six_counties"].polygons(),
		"Export/utm/a_utm":             byID["utm18_polygon_a"].polygons(),
		"two_states_mercator":          byID["two_states_mercator"].polygons(),
	}, got)
}

func corpusPath(source string) string {
	s := strings.TrimPrefix(source, "/vsizip/")
	if i := strings.Index(strings.ToLower(s), ".zip"); i >= 0 {
		s = s[:i+4]
	}
	return filepath.Join(corpusDir, s)
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
	case ds.SourceSRSName != nil:
		return *ds.SourceSRSName + " (no EPSG code)"
	case ds.AssumedSRS != nil:
		return "none (assumed " + *ds.AssumedSRS + ")"
	default:
		return "none"
	}
}

func writeCorpusResults(t *testing.T, results []corpusResult) {
	sort.Slice(results, func(i, j int) bool { return results[i].id < results[j].id })
	var b strings.Builder
	b.WriteString(`| dataset | format | target | CRS (oracle) | CRS (geoingest) | polygons (oracle) | written | area m² (oracle) | area m² (geoingest) | diff | outcome |
|---|---|---|---|---|---:|---:|---:|---:|---:|---|
`)
	for _, r := range results {
		oArea, gArea, diff := "—", "—", "—"
		if r.hasArea {
			oArea = fmt.Sprintf("%.0f", r.oracleArea)
		}
		if r.gotN > 0 {
			gArea = fmt.Sprintf("%.0f", r.gotArea)
			if r.hasArea && r.oracleArea > 0 {
				diff = fmt.Sprintf("%+.5f %%", 100*(r.gotArea-r.oracleArea)/r.oracleArea)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s |\n",
			r.id, r.format, r.target, r.oracleCRS, r.foundCRS, r.oracleN, r.gotN, oArea, gArea, diff, r.outcome)
	}
	const doc = "../../docs/inputs.md"
	const begin, end = "<!-- corpus-results:begin", "<!-- corpus-results:end -->"
	text, err := os.ReadFile(doc)
	require.NoError(t, err)
	s := string(text)
	i := strings.Index(s, begin)
	require.GreaterOrEqual(t, i, 0, "%s has no %s marker", doc, begin)
	i += strings.Index(s[i:], "\n") + 1
	j := strings.Index(s, end)
	require.GreaterOrEqual(t, j, i, "%s has no %s marker after the begin marker", doc, end)
	require.NoError(t, os.WriteFile(doc, []byte(s[:i]+b.String()+s[j:]), 0o644))
}

// TestBadInputsFailPermanently: each hostile or broken upload is a
// permanent failure with a specific reason naming the upload, a FAILED
// claim whose last_error is that message, and nothing written (no ledger
// row, no feature), including when the problem is found after many
// features were already streamed into the COPY.
func TestBadInputsFailPermanently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	six := filepath.Join(corpusDir, "six_counties/six_counties")
	shp, err := os.ReadFile(six + ".shp")
	require.NoError(t, err)
	epinayJSON, err := os.ReadFile(epinay)
	require.NoError(t, err)
	points := []byte(`{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48]]]},"properties":{}},` +
		`{"type":"Feature","geometry":{"type":"Point","coordinates":[2.3,48.8]},"properties":{"name":"a"}}]}`)

	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, dir string) string
		params func(*ingest.Params)
		limits geomio.Limits
		want   []string
	}{
		{name: "zip traversal", make: func(t *testing.T, dir string) string {
			return testfiles.Zip(t, filepath.Join(dir, "evil.zip"), "ok/a.dbf", []byte("x"), "../x.shp", shp)
		}, want: []string{"unsafe zip entry", `parent directory in path "../x.shp"`}},
		{name: "zip absolute path", make: func(t *testing.T, dir string) string {
			return testfiles.Zip(t, filepath.Join(dir, "abs.zip"), "/etc/x.shp", shp)
		}, want: []string{"unsafe zip entry", "absolute path"}},
		{name: "zip bomb ratio", make: func(t *testing.T, dir string) string {
			// 64 MiB of zeros deflates to about 64 KiB: ratio ~1000.
			return testfiles.Zip(t, filepath.Join(dir, "bomb.zip"), "bomb/a.shp", make([]byte, 64<<20))
		}, want: []string{"compression ratio above 200"}},
		{name: "zip bomb of small entries", make: func(t *testing.T, dir string) string {
			// Each entry is under the per-entry ratio check's 1 MiB floor.
			es := []any{"a.shp", shp}
			for i := 0; i < 300; i++ {
				es = append(es, fmt.Sprintf("pad/p%03d.dbf", i), make([]byte, 1<<20-1))
			}
			return testfiles.Zip(t, filepath.Join(dir, "smallbomb.zip"), es...)
		}, want: []string{"zip expands to more than 200 times its size"}},
		{name: "zip bomb size", make: func(t *testing.T, dir string) string {
			return testfiles.Zip(t, filepath.Join(dir, "big.zip"), "a.shp", shp, "a.dbf", make([]byte, 2<<20))
		}, limits: geomio.Limits{MaxUncompressedBytes: 1 << 20}, want: []string{"zip expands to more than 1048576 bytes"}},
		{name: "zip entry count", make: func(t *testing.T, dir string) string {
			var es []any
			for i := 0; i < 20; i++ {
				es = append(es, fmt.Sprintf("f%02d.txt", i), []byte("x"))
			}
			return testfiles.Zip(t, filepath.Join(dir, "many.zip"), es...)
		}, limits: geomio.Limits{MaxEntries: 10}, want: []string{"zip has 20 entries: more than 10 entries, over the limit"}},
		{name: "truncated shp", make: func(t *testing.T, dir string) string {
			p := testfiles.CopySet(t, six, dir, "six", ".shx", ".dbf", ".prj")
			require.NoError(t, os.WriteFile(p, shp[:len(shp)/2], 0o644))
			return p
		}, want: []string{"six.shp", "truncated"}},
		{name: "corrupt geojson", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "corrupt.geojson")
			require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,"x"]]]},"properties":{}}]}`), 0o644))
			return p
		}, want: []string{"feature 0"}},
		{name: "geojson cut off after 4000 features", make: func(t *testing.T, dir string) string {
			// The first features stream into the COPY; the error at the
			// end rolls all of them back.
			p := filepath.Join(dir, "cut.geojson")
			require.NoError(t, os.WriteFile(p, epinayJSON[:len(epinayJSON)*95/100], 0o644))
			return p
		}, want: []string{"cut.geojson", "unexpected EOF"}},
		{name: "points into parcels, wrong-type fail", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "points.geojson")
			require.NoError(t, os.WriteFile(p, points, 0o644))
			return p
		}, params: func(p *ingest.Params) { p.WrongType = ingest.PolicyFail }, want: []string{"feature 1", "not polygonal (wrong-type policy is fail)"}},
		{name: "unknown CRS", make: func(t *testing.T, dir string) string {
			return testfiles.CopySet(t, filepath.Join(corpusDir, "blockgroups_noprj/blockgroups"), dir, "blockgroups", ".shp", ".shx", ".dbf")
		}, want: []string{"unknown CRS", "--source-srid"}},
		{name: "unsupported format", make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "parcels.dxf")
			require.NoError(t, os.WriteFile(p, []byte("0\nSECTION\n"), 0o644))
			return p
		}, want: []string{"unsupported format"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.make(t, t.TempDir())
			p := ingest.DefaultParams("parcels")
			if tc.params != nil {
				tc.params(&p)
			}
			bb := *b
			svc := *b.svc
			svc.Limits = tc.limits
			bb.svc = &svc
			msg := requireRefused(t, &bb, file, p, tc.want[0])
			for _, w := range tc.want[1:] {
				require.Contains(t, msg, w)
			}
			t.Logf("%s", msg)
		})
	}
	var jobs, parcels int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM parcels)`).Scan(&jobs, &parcels))
	require.Zero(t, jobs)
	require.Zero(t, parcels)
}
