package postgis

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

const (
	rpParcels10k      = "../../testdata/synthetic/parcels_10k.geojson"
	rpAdmin           = "../../testdata/synthetic/admin.geojson"
	rpOracle          = "../../testdata/synthetic/report_oracle.json"
	rpBristolMSOA     = "../../testdata/corpus/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson"
	rpBristolBoundary = "../../testdata/corpus/bristol_boundary_bng/boundary_bristol_bng.geojson"
	rpCorpusOracle    = "../../testdata/corpus/oracle.json"
)

// rpEnv is a fresh database with a Service on it, for the report, verify
// and replay tests.
type rpEnv struct {
	pool    *pgxpool.Pool
	store   *Store
	svc     *ingest.Service
	metrics *ingest.Metrics
	reg     *prometheus.Registry
}

func rpSetup(t *testing.T) *rpEnv {
	t.Helper()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	reg := prometheus.NewRegistry()
	metrics := ingest.NewMetrics(reg)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := NewStore(pool, metrics, log)
	svc := ingest.NewService(store, metrics, log)
	svc.Lease = time.Minute
	return &rpEnv{pool: pool, store: store, svc: svc, metrics: metrics, reg: reg}
}

// rpJob makes the job of a local file into target.
func rpJob(t *testing.T, path, target string) ingest.Job {
	t.Helper()
	src, f, err := localfs.Files{}.Source(path)
	require.NoError(t, err)
	job, err := ingest.NewJob(src, ingest.DefaultParams(target), f)
	require.NoError(t, err)
	return job
}

// rpIngest delivers a local file once and requires it to succeed.
func (e *rpEnv) rpIngest(t *testing.T, path, target string) ingest.Result {
	t.Helper()
	res := e.svc.Run(context.Background(), rpJob(t, path, target))
	require.NoError(t, res.Err, "ingest %s", path)
	require.NotEqual(t, ingest.Failed, res.Outcome)
	return res
}

func (e *rpEnv) analyze(t *testing.T) {
	t.Helper()
	_, err := e.pool.Exec(context.Background(), "ANALYZE")
	require.NoError(t, err)
}

type oracleRow struct {
	Admin    string  `json:"admin"`
	N        int64   `json:"n_parcels"`
	NOverlap int64   `json:"n_parcels_overlapping"`
	Area     float64 `json:"area_m2"`
	AreaAlt  float64 `json:"area"`
}

func (o oracleRow) count() int64 {
	if o.NOverlap != 0 {
		return o.NOverlap
	}
	return o.N
}

func (o oracleRow) area() float64 {
	if o.Area != 0 {
		return o.Area
	}
	return o.AreaAlt
}

// requireReportMatches checks the report's admin-unit rows (not its
// unassigned row) against the oracle: the same admin units, parcel counts
// exactly, areas within 0.01 %.
func requireReportMatches(t *testing.T, want []oracleRow, rep *ingest.Report) {
	t.Helper()
	byUnit := map[string]ingest.AreaRow{}
	var got []ingest.AreaRow
	for _, r := range rep.Rows {
		if !r.Unassigned {
			got = append(got, r)
			byUnit[r.AdminUnit] = r
		}
	}
	require.Len(t, got, len(want), "admin units")
	for _, w := range want {
		g, ok := byUnit[w.Admin]
		require.True(t, ok, "admin unit %q missing from the report", w.Admin)
		require.Equal(t, w.count(), g.Parcels, "parcels in %q", w.Admin)
		require.InEpsilon(t, w.area(), g.AreaM2, 1e-4, "area of %q", w.Admin)
		require.InEpsilon(t, g.AreaM2/1e4, g.AreaHa, 1e-12, "hectares of %q", w.Admin)
	}
}

func TestAreaReportSyntheticMatchesOracle(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	e.rpIngest(t, rpParcels10k, "parcels")
	e.rpIngest(t, rpAdmin, "admin_units")
	// A duplicate delivery of each must not change the report.
	e.rpIngest(t, rpParcels10k, "parcels")
	e.rpIngest(t, rpAdmin, "admin_units")
	e.analyze(t)

	var oracle struct {
		ByPointOnSurface []oracleRow `json:"by_point_on_surface"`
		ByIntersection   []oracleRow `json:"by_intersection"`
	}
	b, err := os.ReadFile(rpOracle)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &oracle))

	ctx := context.Background()
	for _, tc := range []struct {
		method string
		want   []oracleRow
	}{
		{ingest.MethodPointOnSurface, oracle.ByPointOnSurface},
		{ingest.MethodIntersection, oracle.ByIntersection},
	} {
		t.Run(tc.method, func(t *testing.T) {
			start := time.Now()
			got, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: tc.method})
			require.NoError(t, err)
			t.Logf("%s on 10k parcels x 120 units: %v", tc.method, time.Since(start))
			requireReportMatches(t, tc.want, got)
		})
	}
}

func TestAreaReportBristolMatchesOracle(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	var oracle struct {
		AreaByAdmin []struct {
			Pair        string `json:"pair"`
			AdminKey    string `json:"admin_key"`
			GeographyM2 struct {
				ByPointOnSurface []oracleRow `json:"by_point_on_surface"`
				ByIntersection   []oracleRow `json:"by_intersection"`
			} `json:"geography_m2"`
		} `json:"area_by_admin"`
	}
	b, err := os.ReadFile(rpCorpusOracle)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &oracle))
	var found bool
	for _, pair := range oracle.AreaByAdmin {
		if pair.Pair != "bristol_msoa_by_boundary" {
			continue
		}
		found = true
		e.rpIngest(t, rpBristolMSOA, "parcels")
		e.rpIngest(t, rpBristolBoundary, "admin_units")
		e.analyze(t)
		ctx := context.Background()
		got, err := e.store.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodPointOnSurface, AdminKey: pair.AdminKey})
		require.NoError(t, err)
		requireReportMatches(t, pair.GeographyM2.ByPointOnSurface, got)
		got, err = e.store.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodIntersection, AdminKey: pair.AdminKey})
		require.NoError(t, err)
		requireReportMatches(t, pair.GeographyM2.ByIntersection, got)
	}
	require.True(t, found, "oracle has no bristol_msoa_by_boundary pair")
}

// TestAreaReportCountsOnlyCurrentGenerations replaces the parcels with a
// new version of the same source and backfills under a new pipeline
// version: the report counts the current generation of the chosen version
// only.
func TestAreaReportCountsOnlyCurrentGenerations(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	dir := t.TempDir()
	// Two parcels inside the first synthetic admin unit's bounding box are
	// enough: use the Bristol pair, where everything is in one unit.
	parcels := dir + "/parcels.geojson"
	b, err := os.ReadFile(rpBristolMSOA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(parcels, b, 0o644))
	e.rpIngest(t, parcels, "parcels")
	e.rpIngest(t, rpBristolBoundary, "admin_units")
	before, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.Len(t, before.Rows, 1)
	require.EqualValues(t, 72, before.Rows[0].Parcels)

	// A new version of the same file with one feature fewer replaces the
	// first generation.
	var fc map[string]any
	require.NoError(t, json.Unmarshal(b, &fc))
	feats := fc["features"].([]any)
	fc["features"] = feats[1:]
	nb, err := json.Marshal(fc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(parcels, nb, 0o644))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(parcels, later, later))
	res := e.rpIngest(t, parcels, "parcels")
	require.Equal(t, ingest.Written, res.Outcome)
	require.NotEmpty(t, res.Replaced)
	after, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 71, after.Rows[0].Parcels, "the replaced generation must not count")
	require.EqualValues(t, 71, after.Total.Parcels)
	require.True(t, after.Reconciled)

	// A new-key backfill under pipeline version 2 (parcels and admin
	// units) lands beside version 1; the default is then version 2, and
	// version 1 can still be asked for.
	for _, f := range []struct{ path, target string }{{rpBristolMSOA, "parcels"}, {rpBristolBoundary, "admin_units"}} {
		p := ingest.DefaultParams(f.target)
		p.PipelineVersion = "2"
		src, fe, err := localfs.Files{}.Source(f.path)
		require.NoError(t, err)
		job, err := ingest.NewJob(src, p, fe)
		require.NoError(t, err)
		res := e.svc.Run(ctx, job)
		require.NoError(t, res.Err)
	}
	v, err := e.store.NewestPipelineVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", v)
	def, err := e.store.AreaReport(ctx, ingest.AreaQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 72, def.Rows[0].Parcels)
	require.Equal(t, "2", def.PipelineVersion)
	v1, err := e.store.AreaReport(ctx, ingest.AreaQuery{PipelineVersion: "1"})
	require.NoError(t, err)
	require.EqualValues(t, 71, v1.Rows[0].Parcels)
	none, err := e.store.AreaReport(ctx, ingest.AreaQuery{PipelineVersion: "9"})
	require.NoError(t, err)
	require.Empty(t, none.Rows)
	require.Zero(t, none.Total.Parcels)
}

func TestAreaQueryValidate(t *testing.T) {
	t.Parallel()
	q := ingest.AreaQuery{}
	require.NoError(t, q.Validate())
	require.Equal(t, ingest.MethodPointOnSurface, q.Method)
	require.Equal(t, "name", q.AdminKey)
	for _, bad := range []ingest.AreaQuery{{Method: "centroid"}, {AdminKey: "name'; DROP TABLE parcels; --"}, {AdminKey: strings.Repeat("k", 64)}} {
		require.Error(t, bad.Validate(), "%+v", bad)
		require.Equal(t, ingest.Permanent, ingest.KindOf(bad.Validate()))
	}
}

// TestAreaReportAdminKeyIsAValue passes a hostile admin key straight to the
// SQL function: it must be read as a property name that matches nothing,
// and the tables must be untouched.
func TestAreaReportAdminKeyIsAValue(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	e.rpIngest(t, rpBristolMSOA, "parcels")
	e.rpIngest(t, rpBristolBoundary, "admin_units")
	ctx := context.Background()
	var n int
	require.NoError(t, e.pool.QueryRow(ctx,
		`SELECT count(*) FROM geoingest_area_by_point_on_surface($1, NULL) WHERE admin_unit = ''`,
		`name') ; DROP TABLE parcels; --`).Scan(&n))
	require.Equal(t, 1, n, "an unknown key names the unit ''")
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&n))
	require.Equal(t, 72, n)
}

// BenchmarkAreaReport times both report methods. By default on the 10k
// synthetic set; GEOINGEST_BENCH_PARCELS and GEOINGEST_BENCH_ADMIN name a
// larger pair made by ../shared/tools/parcelgen (-n 1000000 -admin). It
// logs the plan of each method with EXPLAIN (ANALYZE, BUFFERS) once.
func BenchmarkAreaReport(b *testing.B) {
	parcels, admin := rpParcels10k, rpAdmin
	if p := os.Getenv("GEOINGEST_BENCH_PARCELS"); p != "" {
		parcels, admin = p, os.Getenv("GEOINGEST_BENCH_ADMIN")
	}
	url := pgtest.NewDB(b)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	store := NewStore(pool, nil, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	svc := ingest.NewService(store, nil, nil)
	ctx := context.Background()
	for _, f := range []struct{ path, target string }{{parcels, "parcels"}, {admin, "admin_units"}} {
		src, fe, err := localfs.Files{}.Source(f.path)
		require.NoError(b, err)
		job, err := ingest.NewJob(src, ingest.DefaultParams(f.target), fe)
		require.NoError(b, err)
		start := time.Now()
		res := svc.Run(ctx, job)
		require.NoError(b, res.Err)
		b.Logf("ingested %d %s in %v", res.Features, f.target, time.Since(start))
	}
	_, err = pool.Exec(ctx, "ANALYZE")
	require.NoError(b, err)
	for _, m := range ingest.Methods {
		fn := "geoingest_area_by_point_on_surface"
		if m == ingest.MethodIntersection {
			fn = "geoingest_area_by_intersection"
		}
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM "+fn+"($1, NULL)", "name")
		require.NoError(b, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			require.NoError(b, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		require.NoError(b, rows.Err())
		b.Logf("%s:\n%s", m, plan.String())
		b.Run(m, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, err := store.AreaReport(ctx, ingest.AreaQuery{Method: m})
				require.NoError(b, err)
			}
		})
	}
}
